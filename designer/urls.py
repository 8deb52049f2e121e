"""Root URLconf: the site's own pages and the API are included from their modules."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.urls import URLPattern, URLResolver, include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from designer.access.login_throttle import ThrottledAdminAuthenticationForm, ThrottledLoginView
from designer.api.browsable import code_style
from designer.monitoring import health, metrics
from designer.views.home import home


def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico on every page, whatever the page links; send them to the icon."""
    return HttpResponsePermanentRedirect(static("favicon.svg"))


# the admin's own login form counts against (and is refused by) the same limits as the site's
admin.site.login_form = ThrottledAdminAuthenticationForm

# Errors met before any view answers (no route, an oversized body): the app's words, JSON on /api/ and /hooks/.
handler400 = "designer.error_pages.bad_request"
handler403 = "designer.error_pages.permission_denied"
handler404 = "designer.error_pages.page_not_found"
handler500 = "designer.error_pages.server_error"

urlpatterns: list[URLPattern | URLResolver] = [
    path("", home, name="home"),
    path("favicon.ico", favicon, name="favicon"),
    # For load balancers and orchestrators: unauthenticated, cheap, JSON (designer/monitoring/health.py).
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    # For Prometheus, with the TRELLIS_METRICS_TOKEN bearer token; 404 without one (designer/monitoring/metrics.py).
    path("metrics", metrics.metrics, name="metrics"),
    path(
        "accounts/login/",
        ThrottledLoginView.as_view(redirect_authenticated_user=True),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/code-style.css", code_style, name="api-code-style"),
    path("api/", include("designer.api.urls")),
    path("", include("designer.views.urls")),
]

"""Root URLconf: each domain's pages (``designer/<domain>/urls.py``) and API (``designer/<domain>/api.py``, under the
``api`` namespace) are included from the domain; this module only orders them."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.urls import URLPattern, URLResolver, include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from designer.access.login_throttle import ThrottledAdminAuthenticationForm, ThrottledLoginView
from designer.core.api import ApiRootView
from designer.core.api_schema import unknown_api_path
from designer.core.browsable import code_style
from designer.monitoring import health, metrics
from designer.workflows.views import home


def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico on every page, whatever the page links; send them to the icon."""
    return HttpResponsePermanentRedirect(static("favicon.svg"))


# the admin's own login form counts against (and is refused by) the same limits as the site's
admin.site.login_form = ThrottledAdminAuthenticationForm

# Errors met before any view answers (no route, an oversized body): the app's words, JSON on /api/ and /hooks/.
handler400 = "designer.core.error_pages.bad_request"
handler403 = "designer.core.error_pages.permission_denied"
handler404 = "designer.core.error_pages.page_not_found"
handler500 = "designer.core.error_pages.server_error"

#: The domains whose ``api.py`` has ``urlpatterns`` (``reverse("api:workflow-document", args=[pk])``).
API_MODULES = ("access.api", "workflows.api", "runs.api", "runs.history_api", "runs.executions_api", "secrets.api",
               "triggers.api")
#: The domains whose ``urls.py`` holds their pages.
PAGE_DOMAINS = ("access", "workflows", "runs", "notifications", "secrets", "triggers", "editor")

api_urlpatterns: list[URLPattern | URLResolver] = [
    path("", ApiRootView.as_view(), name="root"),
    *(path("", include(f"designer.{module}")) for module in API_MODULES),
    # Last: anything else under /api/ is a JSON 404 (not Django's HTML page), whatever the method.
    # [\s\S]: a path with a newline in it is an unknown path too, not a miss of every route (Django's HTML 404).
    re_path(r"^[\s\S]*\Z", unknown_api_path, name="unknown"),
]


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
    path("api/", include((api_urlpatterns, "api"))),
    *(path("", include(f"designer.{domain}.urls")) for domain in PAGE_DOMAINS),
]

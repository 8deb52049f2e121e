"""DRF's browsable API under the site's Content-Security-Policy.

DRF's base template puts its code-highlighting rules (pygments, for markdown view descriptions) in an inline
``<style>`` element, which ``style-src 'self'`` refuses on every page. templates/rest_framework/api.html links
them from here instead, a same-origin stylesheet, so the policy needs no nonce, hash or 'unsafe-inline'.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_GET
from rest_framework.compat import pygments_css
from rest_framework.renderers import BrowsableAPIRenderer


@require_GET
@cache_control(max_age=86400, public=True)
def code_style(request: HttpRequest) -> HttpResponse:
    """The rules DRF would have inlined (empty when pygments is not installed)."""
    return HttpResponse(pygments_css(BrowsableAPIRenderer.code_style) or "", content_type="text/css; charset=utf-8")

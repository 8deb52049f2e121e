from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The workflow list; the landing page after login."""
    return render(request, "designer/home.html", {"workflows": []})

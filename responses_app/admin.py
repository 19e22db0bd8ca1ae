from __future__ import annotations

from django.contrib import admin

from .models import ApiKey, Response, Tenant

admin.site.register(Tenant)
admin.site.register(ApiKey)
admin.site.register(Response)

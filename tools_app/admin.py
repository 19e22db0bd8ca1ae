"""The operator console for tools. Each model's admin is its own class."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from tools_app.models import Container, ContainerFile, McpServer


class ContainerFileInline(admin.TabularInline):
    model = ContainerFile
    fields = ("id", "path", "bytes", "source", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Container | None = None) -> bool:
        return False


@admin.register(Container)
class ContainerAdmin(admin.ModelAdmin):
    """Containers are made by the code interpreter or the Containers API and expired by the
    beat task: operators look, they do not edit. The files are those of its /mnt/data."""

    inlines = [ContainerFileInline]

    list_display = ("id", "tenant", "status", "created_at", "last_active_at")
    list_filter = ("status",)
    search_fields = ("=id", "name")
    list_select_related = ("tenant",)
    ordering = ("-last_active_at",)
    readonly_fields = ("id", "tenant", "name", "status", "created_at", "last_active_at", "idle_timeout_s")
    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


class McpServerForm(forms.ModelForm):
    """The headers are secrets: the form never shows them back. A new JSON object replaces
    them; left blank, the current ones are kept."""

    server_url = forms.URLField(max_length=500, assume_scheme="https")
    new_headers = forms.JSONField(
        required=False, label="Headers", widget=forms.Textarea(attrs={"rows": 3}),
        help_text='A JSON object of header names to values, e.g. {"Authorization": "Bearer …"}, sent on '
                  "every request. Leave blank to keep the current headers; {} removes them.")

    class Meta:
        model = McpServer
        fields = ("label", "server_url", "transport", "description", "tenants")

    def clean_new_headers(self) -> dict[str, str] | None:
        value = self.cleaned_data.get("new_headers")
        if value is None:
            return None
        if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise forms.ValidationError("Give a JSON object whose values are strings.")
        return value

    def save(self, commit: bool = True) -> McpServer:
        if self.cleaned_data.get("new_headers") is not None:
            self.instance.headers = self.cleaned_data["new_headers"]
        return super().save(commit=commit)


@admin.register(McpServer)
class McpServerAdmin(admin.ModelAdmin):
    form = McpServerForm
    list_display = ("label", "server_url", "transport", "created_at")
    list_filter = ("transport",)
    search_fields = ("label", "server_url", "description")
    filter_horizontal = ("tenants",)
    readonly_fields = ("header_names", "created_at")
    fieldsets = (
        (None, {"fields": ("label", "server_url", "transport", "description")}),
        ("Secrets", {"fields": ("header_names", "new_headers")}),
        ("Access", {"fields": ("tenants",), "description": "No tenant selected: every tenant may use it."}),
        (None, {"fields": ("created_at",)}),
    )

    @admin.display(description="Current headers")
    def header_names(self, server: McpServer) -> str:
        names = sorted((server.headers or {}).keys())
        return ", ".join(names) + " (values hidden)" if names else "none"

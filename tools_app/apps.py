from django.apps import AppConfig


class ToolsAppConfig(AppConfig):
    """Everything a model can call (python sandbox, MCP, browser): built in a later issue."""

    name = "tools_app"
    verbose_name = "Tools"

from django.apps import AppConfig


class ResponsesAppConfig(AppConfig):
    name = "responses_app"
    verbose_name = "Responses"

    def ready(self) -> None:
        # Connects the signals that empty every process's API key cache when a key or tenant changes.
        from responses_app.tenancy import key_cache  # noqa: F401

        # Takes a file deleted from the Files API out of its vector stores' index.
        from responses_app.vector_stores import file_deletion  # noqa: F401

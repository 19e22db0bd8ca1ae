"""Database backends of this project (ENGINE in settings.DATABASES)."""

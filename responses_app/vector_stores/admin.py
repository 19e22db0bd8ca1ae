"""Vector stores and their files: operators see each store's state and file counts, each
file's status and last error, and may re-ingest files. Nothing else is edited here (a store
and its files are the tenant's, written through the API), and the index itself (chunks,
terms) is not in the console at all: a hand-edited chunk would break BM25's statistics.

Stores hold thousands of files and their index millions of chunks, so nothing here counts
a big table as a whole: the store list counts the files of the stores on its page only
(correlated subqueries, which the paginator's COUNT leaves out), shows no full result count
and no facet counts; a store's page lists its newest FILES_SHOWN files and links to the file
list, filtered to the store, for the rest; chunks are never counted per store (the store
keeps ``chunk_count``). Deletion is the API's (client.vector_stores.delete, .files.delete):
Django's collector would list every chunk on its confirmation page, and would take a file's
chunks out without their statistics."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.contrib.admin.utils import quote
from django.db.models import Count, Exists, IntegerField, OuterRef, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import format_html

from responses_app.console_display import compact_json, pretty_json
from responses_app.models import VectorStore, VectorStoreFile
from responses_app.vector_stores import reingest
from responses_app.vector_stores.objects import vector_store_object
from responses_app.vector_stores.store import expires_at, is_expired

FILES_SHOWN = 50
FILE_STATUSES = ("in_progress", "completed", "failed", "cancelled")


class ReadOnly:
    """Stores and files are written through the API; the console only reads them."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class FilesListFilter(admin.SimpleListFilter):
    title = "files"
    parameter_name = "files"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("failed", "with failed files"), ("in_progress", "with files in progress")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[VectorStore]) -> QuerySet[VectorStore]:
        if self.value() not in ("failed", "in_progress"):
            return queryset
        return queryset.filter(Exists(VectorStoreFile.objects.filter(vector_store=OuterRef("pk"),
                                                                     status=self.value())))


@admin.register(VectorStore)
class VectorStoreAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("id", "name", "tenant", "file_counts", "usage_bytes", "status_badge", "created_at",
                    "last_active_at")
    list_filter = ("tenant", FilesListFilter)
    search_fields = ("=id", "name")
    search_help_text = "A vector store id, or part of its name."
    list_select_related = ("tenant",)
    ordering = ("-created_at",)
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    fields = (("id", "tenant", "name"), "description", "metadata_json",
              ("status_badge", "file_counts", "usage_bytes"),
              ("created_at", "last_active_at", "expires_after_days", "expires"),
              ("chunk_count", "term_count", "embedding_model"), "chunking", "file_table")
    readonly_fields = tuple(name for line in fields for name in (line if isinstance(line, tuple) else (line,)))

    def get_queryset(self, request: HttpRequest) -> QuerySet[VectorStore]:
        # The names of store.get_vector_store's counts, so that wire.objects.vector_store_object
        # reads them as it reads the API's: the status here is the one clients see.
        counts = {f"files_{status}": _files_of_store(status) for status in FILE_STATUSES}
        return super().get_queryset(request).annotate(**counts, files_total=_files_of_store(None),
                                                      usage=_usage_of_store())

    @admin.display(description="files")
    def file_counts(self, store: VectorStore) -> str:
        text = (f"{store.files_total} ({store.files_completed} completed, {store.files_in_progress} in progress, "
                f"{store.files_failed} failed")
        return text + (f", {store.files_cancelled} cancelled)" if store.files_cancelled else ")")

    @admin.display(description="usage bytes", ordering="usage")
    def usage_bytes(self, store: VectorStore) -> int:
        return store.usage

    @admin.display(description="status")
    def status_badge(self, store: VectorStore) -> str:
        status = vector_store_object(store, expires_at(store), is_expired(store))["status"]
        return format_html('<span class="vector-store-status" data-status="{}">{}</span>', status, status)

    @admin.display(description="chunking of new files")
    def chunking(self, store: VectorStore) -> str:
        return chunking_text(store)

    @admin.display(description="expires")
    def expires(self, store: VectorStore) -> Any:
        return expires_at(store) or "never"

    @admin.display(description="metadata")
    def metadata_json(self, store: VectorStore) -> str:
        return format_html("<pre>{}</pre>", pretty_json(store.metadata)) if store.metadata else "-"

    @admin.display(description="its files")
    def file_table(self, store: VectorStore) -> str:
        files = store.files.select_related("file").order_by("-created_at", "-pk")[:FILES_SHOWN]
        listed = reverse("admin:responses_app_vectorstorefile_changelist")
        scope = {"vector_store__id__exact": store.pk}
        return render_to_string("admin/responses_app/vectorstore/_files.html", {
            "files": [_file_row(store_file) for store_file in files],
            "shown": FILES_SHOWN, "total": store.files_total,
            "all_url": f"{listed}?{urlencode(scope)}",
            "by_status": [(status.replace("_", " "), getattr(store, f"files_{status}"),
                           f"{listed}?{urlencode({**scope, 'status__exact': status})}")
                          for status in ("failed", "in_progress") if getattr(store, f"files_{status}")],
        })


@admin.register(VectorStoreFile)
class VectorStoreFileAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("stored_file_id", "filename", "store", "vector_store__tenant", "status_badge", "error",
                    "usage_bytes", "ingest_attempts", "created_at")
    list_display_links = ("stored_file_id",)
    list_filter = ("status", "vector_store__tenant")
    search_fields = ("=file__id", "=vector_store__id", "file__filename")
    search_help_text = "A file id, a vector store id (its files), or part of a file name."
    list_select_related = ("file", "vector_store__tenant")
    ordering = ("-pk",)  # creation order, by the primary key's index
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    actions = ["reingest_files"]
    fields = (("file_link", "store", "tenant", "batch"),
              ("status_badge", "ingest_attempts", "ingest_sent_at", "ingest_beat_at"), "error", "attributes_json",
              ("usage_bytes", "chunks", "chunking"), "created_at")
    readonly_fields = tuple(name for line in fields for name in (line if isinstance(line, tuple) else (line,)))

    @admin.display(description="file", ordering="file_id")
    def stored_file_id(self, store_file: VectorStoreFile) -> str:
        return store_file.file_id

    @admin.display(description="file name", ordering="file__filename")
    def filename(self, store_file: VectorStoreFile) -> str:
        return store_file.file.filename

    @admin.display(description="file")
    def file_link(self, store_file: VectorStoreFile) -> str:
        url = reverse("admin:responses_app_storedfile_change", args=[quote(store_file.file_id)])
        return format_html('<a href="{}">{}</a>', url, store_file.file)

    @admin.display(description="vector store", ordering="vector_store_id")
    def store(self, store_file: VectorStoreFile) -> str:
        url = reverse("admin:responses_app_vectorstore_change", args=[quote(store_file.vector_store_id)])
        return format_html('<a class="vector-store-link" href="{}">{}</a>', url, store_file.vector_store_id)

    @admin.display(description="tenant")
    def tenant(self, store_file: VectorStoreFile) -> str:
        return str(store_file.vector_store.tenant)

    @admin.display(description="status", ordering="status")
    def status_badge(self, store_file: VectorStoreFile) -> str:
        return format_html('<span class="vector-store-file-status" data-status="{}">{}</span>', store_file.status,
                           store_file.status)

    @admin.display(description="last error")
    def error(self, store_file: VectorStoreFile) -> str:
        return _error_text(store_file.last_error) or "-"

    @admin.display(description="attributes")
    def attributes_json(self, store_file: VectorStoreFile) -> str:
        return format_html("<pre>{}</pre>", pretty_json(store_file.attributes)) if store_file.attributes else "-"

    @admin.display(description="chunks indexed")
    def chunks(self, store_file: VectorStoreFile) -> int:
        return store_file.chunks.count()

    @admin.display(description="chunking")
    def chunking(self, store_file: VectorStoreFile) -> str:
        return chunking_text(store_file)

    @admin.action(description="Re-ingest the selected files", permissions=["reingest"])
    def reingest_files(self, request: HttpRequest, queryset: QuerySet[VectorStoreFile]) -> None:
        sent = 0
        for store_file in queryset:
            if reingest.reingest_file(store_file.pk):
                self.log_change(request, store_file, "Re-ingested from the admin.")
                sent += 1
        self.message_user(request, f"{sent} file(s) sent to ingestion again; each is in progress until it is "
                                   "indexed or fails.", messages.SUCCESS)

    def has_reingest_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("responses_app.change_vectorstorefile")


def _files_of_store(status: str | None) -> Coalesce:
    files = VectorStoreFile.objects.filter(vector_store=OuterRef("pk"))
    if status is not None:
        files = files.filter(status=status)
    counted = files.order_by().values("vector_store").annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


def _usage_of_store() -> Coalesce:
    summed = (VectorStoreFile.objects.filter(vector_store=OuterRef("pk")).order_by().values("vector_store")
              .annotate(n=Sum("usage_bytes")).values("n"))
    return Coalesce(Subquery(summed, output_field=IntegerField()), 0)


def _error_text(last_error: Any) -> str:
    if not last_error:
        return ""
    if isinstance(last_error, dict):
        return f"{last_error.get('code', '')}: {last_error.get('message', '')}"
    return compact_json(last_error)


def _file_row(store_file: VectorStoreFile) -> dict[str, Any]:
    error = store_file.last_error
    code, message = (error.get("code", ""), error.get("message", "")) if isinstance(error, dict) else (
        "", _error_text(error))
    return {
        "url": reverse("admin:responses_app_vectorstorefile_change", args=[store_file.pk]),
        "file_id": store_file.file_id, "filename": store_file.file.filename, "status": store_file.status,
        "error_code": code, "error_message": message,
        "attributes": compact_json(store_file.attributes) if store_file.attributes else "",
        "usage_bytes": store_file.usage_bytes, "ingest_attempts": store_file.ingest_attempts,
        "created_at": store_file.created_at,
    }


def chunking_text(row: VectorStore | VectorStoreFile) -> str:
    """A store's chunking (of the files added without their own) or a file's."""
    return f"{row.chunking_type}: {row.max_chunk_size_tokens} tokens a chunk, {row.chunk_overlap_tokens} of overlap"

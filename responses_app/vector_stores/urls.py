"""The vector stores' endpoints under /v1 (api/urls.py includes them)."""

from __future__ import annotations

from django.urls import path

from responses_app.vector_stores import views

urlpatterns = [
    path("vector_stores", views.VectorStoresView.as_view()),
    path("vector_stores/<str:vector_store_id>", views.VectorStoreView.as_view()),
    path("vector_stores/<str:vector_store_id>/search", views.VectorStoreSearchView.as_view()),
    path("vector_stores/<str:vector_store_id>/files", views.VectorStoreFilesView.as_view()),
    path("vector_stores/<str:vector_store_id>/files/<str:file_id>", views.VectorStoreFileView.as_view()),
    path("vector_stores/<str:vector_store_id>/files/<str:file_id>/content",
         views.VectorStoreFileContentView.as_view()),
    path("vector_stores/<str:vector_store_id>/file_batches", views.FileBatchesView.as_view()),
    path("vector_stores/<str:vector_store_id>/file_batches/<str:batch_id>", views.FileBatchView.as_view()),
    path("vector_stores/<str:vector_store_id>/file_batches/<str:batch_id>/cancel",
         views.FileBatchCancelView.as_view()),
    path("vector_stores/<str:vector_store_id>/file_batches/<str:batch_id>/files",
         views.FileBatchFilesView.as_view()),
]

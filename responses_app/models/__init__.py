"""The models, by what they persist: responses and their streams, conversations, webhooks,
schedules, files, batches, prompts, vector stores."""

from responses_app.models.batches import (
    BATCH_REQUEST_ENDS,
    BATCH_TERMINAL_STATUSES,
    BATCH_WEBHOOK_EVENTS,
    Batch,
    BatchRequest,
    BatchRequestState,
    BatchStatus,
)
from responses_app.models.chat_completions import ANSWERED_STATUSES, StoredChatCompletion
from responses_app.models.conversations import Conversation, ConversationItem
from responses_app.models.files import UPLOAD_PURPOSES, FilePurpose, StoredFile
from responses_app.models.prompts import PromptVersion
from responses_app.models.responses import (
    ACTIVE_STATUSES,
    TERMINAL_EVENT_TYPES,
    TERMINAL_EVENTS,
    TERMINAL_STATUSES,
    WEBHOOK_EVENTS,
    ApiKey,
    ApiKeyScope,
    DeferredState,
    EventLog,
    EventNames,
    InputItem,
    OutputItem,
    ReasoningFields,
    Response,
    ResponseEvent,
    ResponseStatus,
    Tenant,
    TenantDailyUsage,
    new_response_id,
)
from responses_app.models.schedules import RunStatus, ScheduledResponse, ScheduledRun
from responses_app.models.steering import ResponseSteer, SteerState
from responses_app.models.vector_stores import (
    VectorStore,
    VectorStoreChunk,
    VectorStoreFile,
    VectorStoreFileBatch,
    VectorStoreFileStatus,
    VectorStoreTerm,
)
from responses_app.models.webhooks import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookEndpoint

__all__ = [
    "ANSWERED_STATUSES",
    "BATCH_REQUEST_ENDS", "BATCH_TERMINAL_STATUSES", "BATCH_WEBHOOK_EVENTS", "Batch", "BatchRequest",
    "BatchRequestState", "BatchStatus",
    "ACTIVE_STATUSES", "TERMINAL_EVENTS", "TERMINAL_EVENT_TYPES", "TERMINAL_STATUSES", "WEBHOOK_EVENTS", "ApiKey",
    "ApiKeyScope", "Conversation", "ConversationItem", "DeferredState", "DeliveryStatus", "EventLog", "EventNames",
    "FilePurpose", "StoredFile", "UPLOAD_PURPOSES", "PromptVersion",
    "InputItem", "OutputItem", "ReasoningFields", "Response", "ResponseEvent", "ResponseStatus", "ResponseSteer",
    "RunStatus",
    "ScheduledResponse", "ScheduledRun", "SteerState", "StoredChatCompletion", "Tenant", "TenantDailyUsage",
    "WebhookAttempt",
    "VectorStore", "VectorStoreChunk", "VectorStoreFile", "VectorStoreFileBatch", "VectorStoreFileStatus",
    "VectorStoreTerm", "WebhookDelivery", "WebhookEndpoint", "new_response_id",
]

"""LangChain (``langchain-openai``'s ChatOpenAI on the Responses API and on Chat Completions,
its default; OpenAIEmbeddings) against the live stack: a tool loop on each, as a LangChain
user writes it, the hosted file_search
tool on a vector store, and LangChain's own vector store on the server's embeddings, with
only the base URL, key and model set (and, for embeddings, raw text rather than OpenAI's
token ids, as LangChain's documentation says for every server but OpenAI's)."""

from __future__ import annotations

from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_openai import ChatOpenAI, OpenAIEmbeddings

from tests.clients.handbook import ANSWER, QUERY, SEARCH_THEN_CITE, handbook
from tests.helpers import function_call_then_answer


@tool
def get_weather(city: str) -> str:
    """The weather of a city."""
    return f"It is sunny in {city}."


def test_a_langchain_tool_loop_runs_on_the_responses_api(stack, client_key):
    model = ChatOpenAI(model="echo", base_url=stack.base_url, api_key=client_key, use_responses_api=True,
                       reasoning={"effort": "low", "summary": "auto"}, max_retries=0)
    agent = model.bind_tools([get_weather])
    messages = [HumanMessage(function_call_then_answer("get_weather", '{"city": "Paris"}', "Sunny in Paris."))]

    first = agent.invoke(messages)
    [call] = first.tool_calls
    assert (call["name"], call["args"]) == ("get_weather", {"city": "Paris"})
    messages += [first, ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"])]
    second = agent.invoke(messages)

    assert second.text == "Sunny in Paris."
    reasoning = [block for block in first.content if isinstance(block, dict) and block.get("type") == "reasoning"]
    assert reasoning and reasoning[0]["summary"][0]["text"] == "I should call get_weather."


def test_a_langchain_tool_loop_runs_on_chat_completions_langchains_default(stack, client_key):
    model = ChatOpenAI(model="echo", base_url=stack.base_url, api_key=client_key, max_retries=0)
    agent = model.bind_tools([get_weather])
    messages = [HumanMessage(function_call_then_answer("get_weather", '{"city": "Paris"}', "Sunny in Paris."))]

    first = agent.invoke(messages)
    [call] = first.tool_calls
    assert (call["name"], call["args"]) == ("get_weather", {"city": "Paris"})
    assert first.response_metadata["finish_reason"] == "tool_calls"
    messages += [first, ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"])]
    second = agent.invoke(messages)
    assert second.text == "Sunny in Paris."

    streamed = list(agent.stream(messages))  # the same turn, as chunks
    assert "".join(chunk.text for chunk in streamed) == "Sunny in Paris."


def test_a_langchain_model_searches_a_vector_store_with_the_file_search_tool_and_cites_the_file(stack, client_key):
    store_id, ids = handbook(stack, client_key)
    model = ChatOpenAI(model="echo", base_url=stack.base_url, api_key=client_key, use_responses_api=True,
                       include=["file_search_call.results"], max_retries=0)
    searcher = model.bind_tools([{"type": "file_search", "vector_store_ids": [store_id]}])

    reply = searcher.invoke([HumanMessage(SEARCH_THEN_CITE)])

    # LangChain keeps the response's items as content blocks: the call with its results, the cited text.
    assert reply.text == ANSWER and not reply.tool_calls  # a hosted tool: nothing for the caller to run
    [search] = [block for block in reply.content if block["type"] == "file_search_call"]
    assert (search["status"], search["queries"]) == ("completed", [QUERY])
    assert [found["filename"] for found in search["results"]] == ["leave.md", "expenses.md"]
    assert search["results"][0]["file_id"] == ids["leave.md"]
    assert "27 days of paid annual leave" in search["results"][0]["text"]
    [text] = [block for block in reply.content if block["type"] == "text"]
    # LangChain renames the citation's index to file_index (it keeps "index" for streaming).
    assert text["annotations"] == [{"type": "file_citation", "file_id": ids["leave.md"], "filename": "leave.md",
                                    "file_index": ANSWER.index("【")}]
    # And in LangChain's standard content blocks: a server tool's call and result, and a citation.
    standard = reply.content_blocks
    assert [block["type"] for block in standard] == ["reasoning", "server_tool_call", "server_tool_result", "text"]
    assert standard[2]["output"][0]["file_id"] == ids["leave.md"]
    assert [(note["type"], note["title"]) for note in standard[3]["annotations"]] == [("citation", "leave.md")]


def test_a_langchain_vector_store_ranks_by_the_server_s_embeddings(stack, client_key):
    embeddings = OpenAIEmbeddings(model="wordllama-l2-supercat", base_url=stack.base_url, api_key=client_key,
                                  check_embedding_ctx_length=False, max_retries=0)
    store = InMemoryVectorStore(embeddings)
    store.add_texts(["Parents receive sixteen weeks of paid parental leave.",
                     "Train tickets are reimbursed in second class.",
                     "Laptops lock after five minutes without use."])

    [found] = store.similarity_search("time off for a new baby", k=1)  # no word in common

    assert found.page_content == "Parents receive sixteen weeks of paid parental leave."
    assert len(embeddings.embed_query("annual leave")) == 256

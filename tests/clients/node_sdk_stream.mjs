// The openai Node SDK: a streamed create, then its continuation by previous_response_id,
// then a retrieve. Prints one JSON line; tests/clients/test_node_clients.py checks it.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY, maxRetries: 0 });
const types = [];
let first;
const stream = await client.responses.create({ model: process.env.MODEL, input: process.env.PROMPT, stream: true });
for await (const event of stream) {
  types.push(event.type);
  if (event.type === "response.completed") first = event.response;
}
const second = await client.responses.create({ model: process.env.MODEL, input: "Again.", previous_response_id: first.id });
const stored = await client.responses.retrieve(first.id);
console.log(JSON.stringify({ types, streamedStatus: first.status, secondText: second.output_text,
                             storedText: stored.output_text, previous: second.previous_response_id, firstId: first.id }));

// The openai Node SDK's own Chat Completions tool loop (chat.completions.runTools, streamed:
// the SDK assembles each completion from its chunks), stored, then the stored completion
// retrieved with its messages. Prints one JSON line; tests/clients/test_node_clients.py checks it.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY, maxRetries: 0 });
const cities = [];
const runner = client.chat.completions.runTools({
  model: process.env.MODEL,
  stream: true,
  store: true,
  metadata: { client: "node" },
  messages: [{ role: "user", content: process.env.PROMPT }],
  tools: [{
    type: "function",
    function: {
      name: "get_weather",
      description: "The weather of a city.",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      parse: JSON.parse,
      function: async ({ city }) => { cities.push(city); return `It is sunny in ${city}.`; },
    },
  }],
});
const finalContent = await runner.finalContent();
const completions = runner.allChatCompletions();
const last = completions[completions.length - 1];
const stored = await client.chat.completions.retrieve(last.id);
const messages = await client.chat.completions.messages.list(last.id);
console.log(JSON.stringify({
  finalContent,
  cities,
  finishReasons: completions.map((completion) => completion.choices[0].finish_reason),
  storedContent: stored.choices[0].message.content,
  storedMetadata: stored.metadata,
  messageRoles: messages.data.map((message) => message.role),
}));

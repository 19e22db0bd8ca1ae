// The OpenAI Agents SDK for JS: an agent with a function tool, run to its final output by
// the SDK's run(), on the Responses API of this server. Prints one JSON line;
// tests/clients/test_node_clients.py checks it.
import { Agent, OpenAIResponsesModel, run, setTracingDisabled, tool } from "@openai/agents";
import OpenAI from "openai";
import { z } from "zod";

setTracingDisabled(true);  // its tracing exports to OpenAI's platform
const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY, maxRetries: 0 });
const getWeather = tool({
  name: "get_weather",
  description: "The weather of a city.",
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => `It is sunny in ${city}.`,
});
const agent = new Agent({
  name: "Weather",
  instructions: "Answer questions about the weather.",
  model: new OpenAIResponsesModel(client, process.env.MODEL),
  tools: [getWeather],
});
const result = await run(agent, process.env.PROMPT);
const outputs = result.newItems.filter((item) => item.type === "tool_call_output_item").map((item) => item.output);
console.log(JSON.stringify({ finalOutput: result.finalOutput, outputs }));

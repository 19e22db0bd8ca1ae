// The Vercel AI SDK's multi-step tool loop (generateText with a tool and stopWhen), as its
// users write it against OpenAI, pointed at this server. Prints one JSON line of what
// the SDK made of it; tests/clients/test_node_clients.py checks it.
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, stepCountIs, tool } from "ai";
import { z } from "zod";

const openai = createOpenAI({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY });
const result = await generateText({
  model: openai.responses(process.env.MODEL),
  prompt: process.env.PROMPT,
  tools: {
    get_weather: tool({
      description: "The weather of a city.",
      inputSchema: z.object({ city: z.string() }),
      execute: async ({ city }) => `It is sunny in ${city}.`,
    }),
  },
  stopWhen: stepCountIs(4),
});
console.log(JSON.stringify({
  text: result.text,
  steps: result.steps.map((step) => ({
    finishReason: step.finishReason,
    toolCalls: step.toolCalls.map((call) => ({ name: call.toolName, input: call.input })),
    toolResults: step.toolResults.map((toolResult) => toolResult.output),
    reasoningText: step.reasoningText ?? null,
  })),
}));

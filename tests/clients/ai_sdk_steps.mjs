// What the AI SDK tool-loop scripts share: the weather tool, as its users define one, and the
// JSON line of what the SDK made of the loop (tests/clients/test_node_clients.py reads it).
import { tool } from "ai";
import { z } from "zod";

export const getWeather = tool({
  description: "The weather of a city.",
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => `It is sunny in ${city}.`,
});

export function printSteps(text, steps, extra = {}) {
  console.log(JSON.stringify({
    text,
    ...extra,
    steps: steps.map((step) => ({
      finishReason: step.finishReason,
      toolCalls: step.toolCalls.map((call) => ({ name: call.toolName, input: call.input })),
      toolResults: step.toolResults.map((toolResult) => toolResult.output),
      reasoningText: step.reasoningText ?? null,
    })),
  }));
}

// The Vercel AI SDK's openai-compatible provider (Chat Completions, as most self-hosted
// servers are reached) in a streamed multi-step tool loop, as its users write it. Prints one
// JSON line of what the SDK made of it; tests/clients/test_node_clients.py checks it.
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { stepCountIs, streamText } from "ai";
import { getWeather, printSteps } from "./ai_sdk_steps.mjs";

const provider = createOpenAICompatible({
  name: "gpt-oss", baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY, includeUsage: true,
});
const result = streamText({
  model: provider.chatModel(process.env.MODEL),
  prompt: process.env.PROMPT,
  tools: { get_weather: getWeather },
  stopWhen: stepCountIs(4),
});
printSteps(await result.text, await result.steps, { outputTokens: (await result.totalUsage).outputTokens });

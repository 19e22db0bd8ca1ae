// The Vercel AI SDK's multi-step tool loop (generateText with a tool and stopWhen), as its
// users write it against OpenAI, pointed at this server. Prints one JSON line of what
// the SDK made of it; tests/clients/test_node_clients.py checks it.
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, stepCountIs } from "ai";
import { getWeather, printSteps } from "./ai_sdk_steps.mjs";

const openai = createOpenAI({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY });
const result = await generateText({
  model: openai.responses(process.env.MODEL),
  prompt: process.env.PROMPT,
  tools: { get_weather: getWeather },
  stopWhen: stepCountIs(4),
});
printSteps(result.text, result.steps);

/** Model providers as `@effect/ai` `LanguageModel` layers, and the `--model` setting. */
export * as AnthropicMessages from "./AnthropicMessages.js"
export * as ChatCompletions from "./ChatCompletions.js"
export * as InvalidToolCall from "./InvalidToolCall.js"
export * as ModelSpec from "./ModelSpec.js"
export * as ProviderError from "./ProviderError.js"
export * as Providers from "./Providers.js"
export * as Sse from "./Sse.js"
export * as SseLanguageModel from "./SseLanguageModel.js"

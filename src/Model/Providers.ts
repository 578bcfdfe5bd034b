/**
 * A `LanguageModel` layer for a {@link ModelSpec}, loaded lazily: the layer is ready at once with a
 * stand-in whose calls wait for the real provider, which is imported in the background. So the
 * provider's modules (and the HTTP client) are neither evaluated nor awaited before the agent
 * answers `initialize`, whatever the harness does with the layer at start-up; the first prompt
 * comes long after the import has finished.
 */
import type * as LanguageModel from "@effect/ai/LanguageModel"
import { LanguageModel as LanguageModelTag } from "@effect/ai/LanguageModel"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import type { ModelSpec } from "./ModelSpec.js"

/** Builds the real provider service; the dynamic imports keep it out of the start-up path. */
export const load = (spec: ModelSpec): Effect.Effect<LanguageModel.Service> =>
  Effect.promise(async () => {
    const [FetchHttpClient, provider] = await Promise.all([
      import("@effect/platform/FetchHttpClient"),
      spec.provider === "anthropic" ? import("./AnthropicMessages.js") : import("./ChatCompletions.js")
    ])
    const config = { baseUrl: spec.baseUrl, model: spec.model, apiKey: spec.apiKey, apiKeyEnv: spec.apiKeyEnv, idleTimeoutMs: spec.idleTimeoutMs }
    return { FetchHttpClient, make: provider.make(config) }
  }).pipe(Effect.flatMap(({ FetchHttpClient, make }) => Effect.provide(make, FetchHttpClient.layer)))

export const layerFromSpec = (spec: ModelSpec): Layer.Layer<LanguageModel.LanguageModel> =>
  Layer.scoped(
    LanguageModelTag,
    Effect.gen(function*() {
      const ready = yield* Deferred.make<LanguageModel.Service>()
      yield* Effect.forkScoped(Deferred.complete(ready, load(spec)))
      const service = Deferred.await(ready)
      return {
        generateText: (options) => Effect.flatMap(service, (s) => s.generateText(options)),
        generateObject: (options) => Effect.flatMap(service, (s) => s.generateObject(options)),
        streamText: (options) => Stream.unwrap(Effect.map(service, (s) => s.streamText(options)))
      } as LanguageModel.Service
    })
  )

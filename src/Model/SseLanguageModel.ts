/**
 * A `LanguageModel` over an HTTP endpoint that answers with server-sent events: the request, the
 * HTTP errors, the event loop and a cut-off stream are the same for every provider; only the
 * headers, the body and the decoding of one event differ (ChatCompletions, AnthropicMessages).
 */
import type * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Response from "@effect/ai/Response"
import type * as Tool from "@effect/ai/Tool"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as Parts from "./Parts.js"
import * as ProviderError from "./ProviderError.js"
import * as Sse from "./Sse.js"

/** What every provider of this package is configured with (`--model`, `--base-url`, the key). */
export interface ProviderConfig {
  /** The API root, e.g. `https://api.openai.com/v1` or `https://api.anthropic.com`; each provider appends its path. */
  readonly baseUrl: string
  readonly model: string
  /** Local servers need none. */
  readonly apiKey: Redacted.Redacted<string> | undefined
  /** The variable the key came from, named in the hint of a 401. */
  readonly apiKeyEnv?: string | undefined
  /** Anthropic requires one (default 8192); Chat Completions sends it when set. */
  readonly maxTokens?: number | undefined
  /** Extra headers (e.g. OpenRouter's `HTTP-Referer`). */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /**
   * A request that receives no byte for this long (before its response starts, or between two
   * reads of its body; a keep-alive comment counts) fails with a provider error. Default: none.
   */
  readonly idleTimeoutMs?: number | undefined
}

/** Turns one response's events into stream parts; a new one per request. */
export interface EventDecoder {
  /** The parts of one event's JSON payload, or the error the server reported in it. */
  readonly decode: (event: unknown) => ReadonlyArray<Response.StreamPartEncoded> | { readonly error: string }
  /** The model has finished: the stream may end now without having been cut off. */
  readonly finished: () => boolean
  /** The closing parts (open blocks, the finish part). */
  readonly end: () => ReadonlyArray<Response.StreamPartEncoded>
}

export interface Spec {
  readonly endpoint: ProviderError.Endpoint
  readonly headers: Readonly<Record<string, string>>
  readonly body: (options: LanguageModel.ProviderOptions) => unknown
  readonly decoder: (tools: ReadonlyArray<Tool.Any>) => EventDecoder
  /**
   * The data of the event that ends the stream, when the format has one (`[DONE]`); otherwise
   * reading stops as soon as the model has finished.
   */
  readonly doneMarker?: string
  /** See {@link ProviderConfig.idleTimeoutMs}. */
  readonly idleTimeoutMs?: number | undefined
}

export const make = (spec: Spec): Effect.Effect<LanguageModel.Service, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const { endpoint } = spec

    const streamText = (options: LanguageModel.ProviderOptions): Stream.Stream<Response.StreamPartEncoded, AiError.AiError> =>
      Effect.gen(function*() {
        const request = HttpClientRequest.post(endpoint.url).pipe(
          HttpClientRequest.setHeaders({ accept: "text/event-stream", ...spec.headers }),
          HttpClientRequest.bodyUnsafeJson(spec.body(options))
        )
        const idle = spec.idleTimeoutMs
        const response = yield* client.execute(request).pipe(
          Effect.mapError((error): AiError.AiError => ProviderError.transportError(endpoint, error)),
          (waiting) =>
            idle === undefined ? waiting : Effect.timeoutFail(waiting, {
              duration: Duration.millis(idle),
              onTimeout: () => ProviderError.idleTimeout(endpoint, idle, "before its response started")
            })
        )
        if (response.status < 200 || response.status >= 300) {
          const body = yield* Effect.orElseSucceed(response.text, () => "")
          return yield* Effect.fail(ProviderError.statusError(endpoint, response.status, body))
        }
        const decoder = spec.decoder(options.tools)
        let done = false
        const closed = () => done || (spec.doneMarker === undefined && decoder.finished())
        const body = response.stream.pipe(
          Stream.mapError((error): AiError.AiError =>
            ProviderError.streamError(endpoint, `the response stream broke off: ${ProviderError.causeText(error)}`)
          ),
          // Per read of the body: the clock runs only while we wait for the server, never while a
          // slow client holds the turn's events (then the body is simply not read).
          (stream) =>
            idle === undefined ? stream : Stream.timeoutFail(
              stream,
              () => ProviderError.idleTimeout(endpoint, idle, "in the middle of its response"),
              Duration.millis(idle)
            )
        )
        return Sse.events(body).pipe(
          Stream.takeWhile(() => !closed()),
          Stream.mapConcatEffect((event) => {
            if (spec.doneMarker !== undefined && event.data.trim() === spec.doneMarker) {
              done = true
              return Effect.succeed([])
            }
            let payload: unknown
            try {
              payload = JSON.parse(event.data)
            } catch {
              return Effect.fail(ProviderError.streamError(endpoint, `unreadable stream event: ${event.data.slice(0, 200)}`))
            }
            const parts = decoder.decode(payload)
            return "error" in parts
              ? Effect.fail(ProviderError.streamError(endpoint, `the server reported an error mid-stream: ${parts.error}`))
              : Effect.succeed(parts)
          }),
          Stream.concat(Stream.suspend(() =>
            done || decoder.finished()
              ? Stream.fromIterable(decoder.end())
              : Stream.fail(ProviderError.streamError(endpoint, "the response stream ended before the model finished (connection cut?)"))
          ))
        )
      }).pipe(Stream.unwrap)

    return yield* LanguageModel.make({
      streamText,
      generateText: (options) => Stream.runCollect(streamText(options)).pipe(Effect.map((chunk) => Parts.collect(Array.from(chunk))))
    })
  })

//! Each API's wire format: the bytes of every event the emulator sends.
//!
//! Written from each API's published streaming format (see `shared/notes/measurement.md`):
//! OpenAI chat (role-only first chunk, usage chunk with `choices: []` when
//! `stream_options.include_usage`, `data: [DONE]`), OpenAI completions, OpenAI Responses
//! (named events, no `[DONE]`), Anthropic Messages (`message_start` … `message_stop`, a
//! `ping`), Gemini (`alt=sse`, CRLF line ends as Google sends them, `usageMetadata`),
//! Ollama NDJSON (`done: true` with eval counts and durations in ns) and the Vercel AI SDK
//! UI message stream (`start` … `finish`, `data: [DONE]`, usage as an app forwards it in the
//! `finish` part's `messageMetadata.totalUsage`).
//!
//! Every content event also carries `"x_sent_ns"`, a field no real API uses, holding the
//! CLOCK_MONOTONIC time it was produced (see [`crate::clock`]).

use bytes::Bytes;
use serde_json::{Value, json};
use tpsmeter_core::Api;

use crate::request::StreamRequest;

/// Stand-in text swapped for the bytes `FF FE` by [`Wire::invalid_utf8`].
const INVALID_UTF8_MARK: &str = "@@INVALID_UTF8@@";

/// The id of the one text part of a Vercel UI message stream.
const VERCEL_TEXT_ID: &str = "txt-0";

/// The emitted tokens cycle through these; two are multi-byte so that a client decoding each
/// network chunk as UTF-8 on its own shows the bug.
const TOKENS: [&str; 8] = [
    " the", " quick", " brown", " fox", " jumps", " naïve", " 世界", " dog",
];

/// The text of token `i`.
pub fn token_text(i: u32) -> &'static str {
    TOKENS[i as usize % TOKENS.len()]
}

/// How a stream ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// The schedule's tokens were all sent.
    Stop,
    /// The request's `max_tokens` cut the schedule short.
    Length,
}

/// Scheduled durations the Ollama final object reports, in ns.
#[derive(Debug, Clone, Copy)]
pub struct Durations {
    /// Arrival to the last token.
    pub total_ns: u64,
    /// The schedule's TTFT.
    pub prompt_eval_ns: u64,
    /// Output tokens × ITL.
    pub eval_ns: u64,
}

/// Renders one response's events.
#[derive(Debug)]
pub struct Wire {
    req: StreamRequest,
    /// Sequence number of this response, used in its ids.
    id: u64,
    /// `model` as a JSON string literal, quoted and escaped once.
    model_json: String,
    /// Seconds since the Unix epoch at the response's start (`created`).
    created: u64,
    /// Responses API `sequence_number` of the next event.
    seq: u64,
    /// What an in-stream error event says.
    error_message: String,
}

impl Wire {
    /// A renderer for response number `id` to `req`.
    pub fn new(req: StreamRequest, id: u64) -> Wire {
        let model_json = Value::String(req.model.clone()).to_string();
        let created = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        Wire {
            req,
            id,
            model_json,
            created,
            seq: 0,
            error_message: "emulated server error mid-stream".to_owned(),
        }
    }

    /// Makes the in-stream error event say `message` (`/echo-key`).
    pub fn set_error_message(&mut self, message: String) {
        self.error_message = message;
    }

    /// The response's `Content-Type`.
    pub fn content_type(&self) -> &'static str {
        if self.req.api.is_ndjson() {
            "application/x-ndjson"
        } else {
            "text/event-stream"
        }
    }

    fn sse(data: &str) -> Bytes {
        Bytes::from(format!("data: {data}\n\n"))
    }

    fn named(&mut self, event: &str, mut data: Value) -> Bytes {
        if self.req.api == Api::OpenaiResponses {
            data["sequence_number"] = json!(self.seq);
            self.seq += 1;
        }
        Bytes::from(format!("event: {event}\ndata: {data}\n\n"))
    }

    fn gemini(data: &str) -> Bytes {
        Bytes::from(format!("data: {data}\r\n\r\n"))
    }

    fn ndjson(data: &str) -> Bytes {
        Bytes::from(format!("{data}\n"))
    }

    fn response_object(&self, status: &str, usage: Value) -> Value {
        json!({"id": format!("resp_{}", self.id), "object": "response", "created_at": self.created,
               "status": status, "model": self.req.model, "output": [], "usage": usage})
    }

    /// Events before the first token.
    pub fn preamble(&mut self) -> Vec<Bytes> {
        let (id, created, model) = (self.id, self.created, self.model_json.clone());
        match self.req.api {
            Api::OpenaiChat | Api::Local => vec![Self::sse(&format!(
                r#"{{"id":"chatcmpl-{id}","object":"chat.completion.chunk","created":{created},"model":{model},"choices":[{{"index":0,"delta":{{"role":"assistant","content":""}},"logprobs":null,"finish_reason":null}}]}}"#
            ))],
            Api::OpenaiResponses => {
                let created_ev = json!({"type": "response.created",
                    "response": self.response_object("in_progress", Value::Null)});
                let progress = json!({"type": "response.in_progress",
                    "response": self.response_object("in_progress", Value::Null)});
                let item = json!({"type": "response.output_item.added", "output_index": 0,
                    "item": {"id": format!("msg_{id}"), "type": "message", "status": "in_progress",
                             "role": "assistant", "content": []}});
                let part = json!({"type": "response.content_part.added",
                    "item_id": format!("msg_{id}"), "output_index": 0, "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []}});
                vec![
                    self.named("response.created", created_ev),
                    self.named("response.in_progress", progress),
                    self.named("response.output_item.added", item),
                    self.named("response.content_part.added", part),
                ]
            }
            Api::Anthropic => {
                let start = json!({"type": "message_start", "message": {
                    "id": format!("msg_{id}"), "type": "message", "role": "assistant",
                    "content": [], "model": self.req.model, "stop_reason": null,
                    "stop_sequence": null,
                    "usage": {"input_tokens": self.req.prompt_tokens, "output_tokens": 1}}});
                let block = json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}});
                vec![
                    self.named("message_start", start),
                    self.named("content_block_start", block),
                    self.named("ping", json!({"type": "ping"})),
                ]
            }
            Api::VercelUi => vec![
                Self::sse(&json!({"type": "start", "messageId": format!("msg-{id}")}).to_string()),
                Self::sse(r#"{"type":"start-step"}"#),
                Self::sse(&json!({"type": "text-start", "id": VERCEL_TEXT_ID}).to_string()),
            ],
            Api::OpenaiCompletions | Api::Gemini | Api::OllamaChat | Api::OllamaGenerate => {
                Vec::new()
            }
        }
    }

    /// One content event carrying `text` (the tokens from `first` on, `cumulative` tokens
    /// sent when it is done), stamped `sent_ns`.
    pub fn content(&mut self, text: &str, cumulative: u32, sent_ns: u64) -> Bytes {
        let (id, created, model) = (self.id, self.created, &self.model_json);
        let text = Value::String(text.to_owned()).to_string();
        match self.req.api {
            Api::OpenaiChat | Api::Local => Self::sse(&format!(
                r#"{{"id":"chatcmpl-{id}","object":"chat.completion.chunk","created":{created},"model":{model},"choices":[{{"index":0,"delta":{{"content":{text}}},"logprobs":null,"finish_reason":null}}],"x_sent_ns":{sent_ns}}}"#
            )),
            Api::OpenaiCompletions => Self::sse(&format!(
                r#"{{"id":"cmpl-{id}","object":"text_completion","created":{created},"model":{model},"choices":[{{"text":{text},"index":0,"logprobs":null,"finish_reason":null}}],"x_sent_ns":{sent_ns}}}"#
            )),
            Api::OpenaiResponses => {
                let seq = self.seq;
                self.seq += 1;
                Bytes::from(format!(
                    "event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"sequence_number\":{seq},\"item_id\":\"msg_{id}\",\"output_index\":0,\"content_index\":0,\"delta\":{text},\"logprobs\":[],\"x_sent_ns\":{sent_ns}}}\n\n"
                ))
            }
            Api::Anthropic => Bytes::from(format!(
                "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":{text}}},\"x_sent_ns\":{sent_ns}}}\n\n"
            )),
            Api::Gemini => {
                let prompt = self.req.prompt_tokens;
                Self::gemini(&format!(
                    r#"{{"candidates":[{{"content":{{"parts":[{{"text":{text}}}],"role":"model"}},"index":0}}],"usageMetadata":{{"promptTokenCount":{prompt},"candidatesTokenCount":{cumulative},"totalTokenCount":{}}},"modelVersion":{model},"responseId":"gem-{id}","x_sent_ns":{sent_ns}}}"#,
                    prompt + cumulative
                ))
            }
            Api::OllamaChat => Self::ndjson(&format!(
                r#"{{"model":{model},"created_at":"{}","message":{{"role":"assistant","content":{text}}},"done":false,"x_sent_ns":{sent_ns}}}"#,
                rfc3339_now()
            )),
            Api::OllamaGenerate => Self::ndjson(&format!(
                r#"{{"model":{model},"created_at":"{}","response":{text},"done":false,"x_sent_ns":{sent_ns}}}"#,
                rfc3339_now()
            )),
            Api::VercelUi => Self::sse(&format!(
                r#"{{"type":"text-delta","id":"{VERCEL_TEXT_ID}","delta":{text},"x_sent_ns":{sent_ns}}}"#
            )),
        }
    }

    /// A content event whose text holds the bytes `FF FE`: never valid UTF-8.
    pub fn invalid_utf8(&mut self, cumulative: u32, sent_ns: u64) -> Bytes {
        let good = self.content(INVALID_UTF8_MARK, cumulative, sent_ns);
        let mark = INVALID_UTF8_MARK.as_bytes();
        let mut out = Vec::with_capacity(good.len());
        let mut rest = &good[..];
        while let Some(pos) = rest.windows(mark.len()).position(|w| w == mark) {
            out.extend_from_slice(&rest[..pos]);
            out.extend_from_slice(&[0xFF, 0xFE]);
            rest = &rest[pos + mark.len()..];
        }
        out.extend_from_slice(rest);
        Bytes::from(out)
    }

    /// One event whose JSON is cut off in the middle of an object.
    pub fn malformed(&self) -> Bytes {
        let broken = r#"{"choices":[{"index":0,"delta":{"content":"unterminated"#;
        match self.req.api {
            Api::OpenaiResponses => Bytes::from(format!(
                "event: response.output_text.delta\ndata: {broken}\n\n"
            )),
            Api::Anthropic => {
                Bytes::from(format!("event: content_block_delta\ndata: {broken}\n\n"))
            }
            Api::Gemini => Self::gemini(broken),
            Api::OllamaChat | Api::OllamaGenerate => Self::ndjson(broken),
            Api::OpenaiChat | Api::Local | Api::OpenaiCompletions | Api::VercelUi => {
                Self::sse(broken)
            }
        }
    }

    /// The API's in-stream error event (the HTTP status was already 200).
    pub fn error_event(&mut self) -> Vec<Bytes> {
        let message = self.error_message.as_str();
        match self.req.api {
            // vLLM and OpenAI send the error as a data event, then `[DONE]`.
            Api::OpenaiChat | Api::Local | Api::OpenaiCompletions => vec![
                Self::sse(
                    &json!({"error": {"message": message, "type": "server_error", "code": 500}})
                        .to_string(),
                ),
                Self::sse("[DONE]"),
            ],
            Api::OpenaiResponses => vec![self.named(
                "error",
                json!({"type": "error", "code": "server_error", "message": message, "param": null}),
            )],
            Api::Anthropic => vec![self.named(
                "error",
                json!({"type": "error", "error": {"type": "overloaded_error", "message": message}}),
            )],
            Api::Gemini => vec![Self::gemini(
                &json!({"error": {"code": 500, "message": message, "status": "INTERNAL"}})
                    .to_string(),
            )],
            Api::OllamaChat | Api::OllamaGenerate => {
                vec![Self::ndjson(&json!({"error": message}).to_string())]
            }
            // What `createUIMessageStream` writes when the route fails: the `onError` text,
            // then the stream closes as usual with `[DONE]`.
            Api::VercelUi => vec![
                Self::sse(&json!({"type": "error", "errorText": message}).to_string()),
                Self::sse("[DONE]"),
            ],
        }
    }

    /// Events after the last token: finish reason, usage, end marker.
    pub fn epilogue(&mut self, tokens: u32, finish: Finish, d: Durations) -> Vec<Bytes> {
        let (id, created, model) = (self.id, self.created, self.model_json.clone());
        let prompt = self.req.prompt_tokens;
        let usage = json!({"prompt_tokens": prompt, "completion_tokens": tokens,
                           "total_tokens": prompt + tokens});
        let openai_finish = match finish {
            Finish::Stop => "stop",
            Finish::Length => "length",
        };
        match self.req.api {
            Api::OpenaiChat | Api::Local | Api::OpenaiCompletions => {
                let (object, prefix, choice) = if self.req.api != Api::OpenaiCompletions {
                    (
                        "chat.completion.chunk",
                        "chatcmpl",
                        json!({"index": 0, "delta": {},
                        "logprobs": null, "finish_reason": openai_finish}),
                    )
                } else {
                    (
                        "text_completion",
                        "cmpl",
                        json!({"text": "", "index": 0,
                        "logprobs": null, "finish_reason": openai_finish}),
                    )
                };
                let head = json!({"id": format!("{prefix}-{id}"), "object": object,
                    "created": created, "model": self.req.model});
                let mut last = head.clone();
                last["choices"] = json!([choice]);
                let mut out = vec![Self::sse(&last.to_string())];
                if self.req.include_usage {
                    let mut u = head;
                    u["choices"] = json!([]);
                    u["usage"] = usage;
                    out.push(Self::sse(&u.to_string()));
                }
                out.push(Self::sse("[DONE]"));
                out
            }
            Api::OpenaiResponses => {
                let text: String = (0..tokens).map(token_text).collect();
                let r_usage = json!({"input_tokens": prompt, "output_tokens": tokens,
                    "total_tokens": prompt + tokens,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens_details": {"reasoning_tokens": 0}});
                let msg_id = format!("msg_{id}");
                let done = json!({"type": "response.output_text.done", "item_id": msg_id,
                    "output_index": 0, "content_index": 0, "text": text});
                let part = json!({"type": "response.content_part.done", "item_id": msg_id,
                    "output_index": 0, "content_index": 0,
                    "part": {"type": "output_text", "text": text, "annotations": []}});
                let item = json!({"type": "response.output_item.done", "output_index": 0,
                    "item": {"id": msg_id, "type": "message", "status": "completed",
                             "role": "assistant",
                             "content": [{"type": "output_text", "text": text, "annotations": []}]}});
                let (event, status) = match finish {
                    Finish::Stop => ("response.completed", "completed"),
                    Finish::Length => ("response.incomplete", "incomplete"),
                };
                let mut response = self.response_object(status, r_usage);
                if finish == Finish::Length {
                    response["incomplete_details"] = json!({"reason": "max_output_tokens"});
                }
                let end = json!({"type": event, "response": response});
                vec![
                    self.named("response.output_text.done", done),
                    self.named("response.content_part.done", part),
                    self.named("response.output_item.done", item),
                    self.named(event, end),
                ]
            }
            Api::Anthropic => {
                let stop = match finish {
                    Finish::Stop => "end_turn",
                    Finish::Length => "max_tokens",
                };
                vec![
                    self.named(
                        "content_block_stop",
                        json!({"type": "content_block_stop", "index": 0}),
                    ),
                    self.named(
                        "message_delta",
                        json!({"type": "message_delta",
                               "delta": {"stop_reason": stop, "stop_sequence": null},
                               "usage": {"output_tokens": tokens}}),
                    ),
                    self.named("message_stop", json!({"type": "message_stop"})),
                ]
            }
            Api::Gemini => {
                let reason = match finish {
                    Finish::Stop => "STOP",
                    Finish::Length => "MAX_TOKENS",
                };
                vec![Self::gemini(&format!(
                    r#"{{"candidates":[{{"content":{{"parts":[{{"text":""}}],"role":"model"}},"finishReason":"{reason}","index":0}}],"usageMetadata":{{"promptTokenCount":{prompt},"candidatesTokenCount":{tokens},"totalTokenCount":{}}},"modelVersion":{model},"responseId":"gem-{id}"}}"#,
                    prompt + tokens
                ))]
            }
            Api::OllamaChat | Api::OllamaGenerate => {
                let mut last = json!({"model": self.req.model, "created_at": rfc3339_now(),
                    "done": true, "done_reason": openai_finish,
                    "total_duration": d.total_ns, "load_duration": 0,
                    "prompt_eval_count": prompt, "prompt_eval_duration": d.prompt_eval_ns,
                    "eval_count": tokens, "eval_duration": d.eval_ns});
                if self.req.api == Api::OllamaChat {
                    last["message"] = json!({"role": "assistant", "content": ""});
                } else {
                    last["response"] = json!("");
                }
                vec![Self::ndjson(&last.to_string())]
            }
            Api::VercelUi => {
                let finish = json!({"type": "finish", "finishReason": openai_finish,
                    "messageMetadata": {"totalUsage": {"inputTokens": prompt,
                        "outputTokens": tokens, "totalTokens": prompt + tokens}}});
                vec![
                    Self::sse(&json!({"type": "text-end", "id": VERCEL_TEXT_ID}).to_string()),
                    Self::sse(r#"{"type":"finish-step"}"#),
                    Self::sse(&finish.to_string()),
                    Self::sse("[DONE]"),
                ]
            }
        }
    }
}

/// Now as RFC 3339 UTC with nanoseconds, as Ollama writes `created_at`.
fn rfc3339_now() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:09}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        now.subsec_nanos()
    )
}

/// Days since 1970-01-01 to (year, month, day): H. Hinnant's `civil_from_days`.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_match_known_days() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_454), (2026, 1, 1));
    }
}

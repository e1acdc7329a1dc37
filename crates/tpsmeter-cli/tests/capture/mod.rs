//! A capturing server for the bench tests: answers every chat request with one chunk of
//! text (or, [`Capture::answering`], an answer as long as a test wants) and keeps each
//! request's body, to read what `tpsmeter bench` sent.
#![allow(dead_code, clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// The answer's text: several tokens in one chunk, so a tokenizer's count differs from the
/// chunk count.
pub const ANSWER: &str = "Hi there, how are you today?";

/// A server that answers every chat request with [`ANSWER`] in one chunk, without usage, and
/// keeps each request's body.
pub struct Capture {
    pub url: String,
    pub bodies: Arc<Mutex<Vec<String>>>,
}

/// What the server answers: `piece` `events` times, each in an event of its own, without
/// usage.
#[derive(Debug, Clone)]
pub struct Answer {
    pub piece: String,
    pub events: usize,
}

impl Answer {
    /// [`ANSWER`] in one event.
    pub fn short() -> Answer {
        Answer {
            piece: ANSWER.into(),
            events: 1,
        }
    }

    /// The answer's whole text.
    pub fn text(&self) -> String {
        self.piece.repeat(self.events)
    }
}

impl Capture {
    pub fn start() -> Capture {
        Capture::answering(Answer::short())
    }

    /// A server that answers every request with `answer`.
    pub fn answering(answer: Answer) -> Capture {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&bodies);
        let event = format!(
            "data: {}\n\n",
            serde_json::json!({"choices": [{"index": 0, "delta": {"content": answer.piece}}]})
        );
        let events = answer.events;
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                let kept = Arc::clone(&kept);
                let event = event.clone();
                std::thread::spawn(move || serve_one(conn, &kept, &event, events));
            }
        });
        Capture { url, bodies }
    }

    /// Every request body so far as JSON, in order of arrival.
    pub fn bodies_json(&self) -> Vec<Value> {
        self.bodies
            .lock()
            .unwrap()
            .iter()
            .map(|b| serde_json::from_str(b).unwrap())
            .collect()
    }

    /// The user message of every request so far, in order of arrival.
    pub fn prompts(&self) -> Vec<String> {
        self.bodies
            .lock()
            .unwrap()
            .iter()
            .map(|b| {
                let v: Value = serde_json::from_str(b).unwrap();
                let messages = v["messages"].as_array().unwrap();
                let user = messages.iter().find(|m| m["role"] == "user").unwrap();
                user["content"].as_str().unwrap().to_owned()
            })
            .collect()
    }
}

/// Reads one request (head and `content-length` body), answers with `event` `events`
/// times, closes.
fn serve_one(conn: TcpStream, kept: &Mutex<Vec<String>>, event: &str, events: usize) {
    let mut reader = BufReader::new(conn);
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap();
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    kept.lock().unwrap().push(String::from_utf8(body).unwrap());
    let mut conn = reader.into_inner();
    let head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
    if conn.write_all(head).is_err() {
        return;
    }
    for _ in 0..events {
        if conn.write_all(event.as_bytes()).is_err() {
            return;
        }
    }
    let _ = conn.write_all(b"data: [DONE]\n\n");
}

//! A capturing server for the bench tests: answers every chat request with one chunk of
//! text and keeps each request's body, to read what `tpsmeter bench` sent.
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

impl Capture {
    pub fn start() -> Capture {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&bodies);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                let kept = Arc::clone(&kept);
                std::thread::spawn(move || serve_one(conn, &kept));
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

/// Reads one request (head and `content-length` body), answers, closes.
fn serve_one(conn: TcpStream, kept: &Mutex<Vec<String>>) {
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
    let _ = conn.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n\
          data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi there, how are you today?\"}}]}\n\n\
          data: [DONE]\n\n",
    );
}

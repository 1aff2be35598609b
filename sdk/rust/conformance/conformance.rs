//! The Rust SDK's build of the conformance plugin
//! (host/wasm/testdata/conformance/SPEC.md). Build: sdk/rust/build.sh.

use ruled::{Call, Config, Error, Request, Status};

fn status_text(op: &str, s: Status) -> Error {
    Error::new(format!("{}: status {}", op, s.0))
}

fn init() {
    ruled::plugin("conformance", "1.0.0");

    ruled::condition("noop", |_: &Config| Ok(Box::new(|_: &Call| Ok(false))));
    ruled::condition("temp_high", |_: &Config| {
        Ok(Box::new(|c: &Call| {
            Ok(c.event.float("data.value").map_or(false, |v| v > 20.0) && c.event.equals("type", "temperature"))
        }))
    });
    ruled::condition("field_equals", |cfg: &Config| {
        let path = cfg.require_str("path")?.to_string();
        let value = cfg.require_str("value")?.to_string();
        Ok(Box::new(move |c: &Call| Ok(c.event.equals(&path, &value))))
    });
    ruled::condition("number_above", |cfg: &Config| {
        let path = cfg.require_str("path")?.to_string();
        let above = cfg.require_f64("above")?;
        Ok(Box::new(move |c: &Call| match c.event.float(&path) {
            Some(v) => Ok(v > above),
            None => Err(Error::new(format!("number_above: {} is not a number", path))),
        }))
    });
    ruled::condition("now_is_event_time", |_: &Config| {
        Ok(Box::new(|c: &Call| {
            let now = ruled::now();
            ruled::log(ruled::INFO, &format!("now {}", now));
            Ok(now == c.time)
        }))
    });
    ruled::condition("try_publish", |_: &Config| {
        Ok(Box::new(|_: &Call| match ruled::publish("conformance.denied", b"{}") {
            Err(Status::DENIED) => Ok(true),
            Err(s) => Err(Error::new(format!("publish returned {}", -s.0))),
            Ok(()) => Err(Error::new("publish returned 0")),
        }))
    })
    .needs("publish");
    ruled::condition("try_http", |_: &Config| {
        Ok(Box::new(|_: &Call| {
            match ruled::http(&Request { method: "", url: "http://conformance.test/", headers: &[], body: b"" }) {
                Err(Status::DENIED) => Ok(true),
                Err(s) => Err(Error::new(format!("http returned {}", -s.0))),
                Ok(_) => Err(Error::new("http returned 0")),
            }
        }))
    })
    .needs("http");
    ruled::condition("fail_when", |cfg: &Config| {
        let msg = cfg.require_str("message")?.to_string();
        Ok(Box::new(move |_: &Call| Err(Error::new(msg.clone()))))
    });

    ruled::action("echo", |cfg: &Config| {
        let prefix = cfg.str_or("prefix", "").to_string();
        Ok(Box::new(move |c: &Call| {
            Ok(format!(
                "{}topic={} rule={} step={} run={} key={} pass={} time={}",
                prefix, c.topic(), c.rule(), c.step(), c.run(), c.key(), c.pass, c.time
            )
            .into_bytes())
        }))
    })
    .example("{\"prefix\":\"> \"}");
    ruled::action("echo_raw", |_: &Config| Ok(Box::new(|_: &Call| Ok(ruled::event_raw()))));
    ruled::action("echo_config", |cfg: &Config| {
        let raw = cfg.raw().to_vec();
        Ok(Box::new(move |_: &Call| Ok(raw.clone())))
    });
    ruled::action("publish", |cfg: &Config| {
        let topic = cfg.require_str("topic")?.to_string();
        Ok(Box::new(move |_: &Call| {
            ruled::publish(&topic, &ruled::event_raw()).map_err(|s| status_text("publish", s))?;
            Ok(Vec::new())
        }))
    })
    .needs("publish");
    ruled::action("kv_roundtrip", |_: &Config| {
        Ok(Box::new(|c: &Call| {
            let key = c.event.str("key").unwrap_or("");
            let value = c.event.str("value").unwrap_or("");
            ruled::kv_set(key, value.as_bytes()).map_err(|s| status_text("kv: set", s))?;
            let v = match ruled::kv_get(key) {
                Ok(Some(v)) => v,
                Ok(None) => return Err(status_text("kv: get", Status::NOT_FOUND)),
                Err(s) => return Err(status_text("kv: get", s)),
            };
            ruled::kv_delete(key).map_err(|s| status_text("kv: delete", s))?;
            match ruled::kv_get(key) {
                Ok(None) => Ok(v),
                Ok(Some(after)) => Err(Error::new(format!("kv: get after delete: status {}", -(after.len() as i64)))),
                Err(s) => Err(status_text("kv: get after delete", s)),
            }
        }))
    })
    .needs("kv");
    ruled::action("fire", |cfg: &Config| {
        let rule = cfg.require_str("rule")?.to_string();
        Ok(Box::new(move |_: &Call| {
            let id = ruled::fire(&rule, &ruled::event_raw()).map_err(|s| status_text("fire", s))?;
            Ok(id.into_bytes())
        }))
    })
    .needs("fire");
    ruled::action("http", |cfg: &Config| {
        let url = cfg.require_str("url")?.to_string();
        Ok(Box::new(move |c: &Call| {
            let body = ruled::event_raw();
            let resp = ruled::http(&Request { method: "POST", url: &url, headers: &[("Idempotency-Key", c.key())], body: &body })
                .map_err(|s| status_text("http", s))?;
            let mut out = format!("{} {} ", resp.status, resp.header("X-Answer")).into_bytes();
            out.extend_from_slice(&resp.body);
            Ok(out)
        }))
    })
    .needs("http");
    ruled::action("fail", |cfg: &Config| {
        let msg = cfg.require_str("message")?.to_string();
        Ok(Box::new(move |_: &Call| Err(Error::new(msg.clone()))))
    });
    ruled::action("crash", |cfg: &Config| {
        let msg = cfg.require_str("message")?.to_string();
        Ok(Box::new(move |_: &Call| panic!("{}", msg)))
    });
    ruled::action("big_result", |cfg: &Config| {
        let size = cfg.require_i64("size")?;
        if !(0..=1073741823).contains(&size) {
            return Err(Error::new("big_result: config \"size\" must be from 0 to 1073741823"));
        }
        let out = vec![b'x'; size as usize];
        Ok(Box::new(move |_: &Call| Ok(out.clone())))
    });
    ruled::action("count", |cfg: &Config| {
        let path = cfg.require_str("path")?.to_string();
        Ok(Box::new(move |c: &Call| match c.event.count(&path) {
            Some(n) => Ok(n.to_string().into_bytes()),
            None => Err(Error::new(format!("count: {} is not a container", path))),
        }))
    });
    ruled::action("log_levels", |_: &Config| {
        Ok(Box::new(|_: &Call| {
            for l in ruled::TRACE..=ruled::ERROR {
                ruled::log(l, &format!("level {}", l));
            }
            Ok(Vec::new())
        }))
    });
    ruled::action("reject_config", |_: &Config| Err(Error::new("reject_config: refused")));
}

ruled::main!(init);

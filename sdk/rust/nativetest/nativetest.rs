//! The Rust SDK's native runs under test (host/wasm TestRustNative): a
//! plugin's functions called natively with ruled::native's in-memory host —
//! configs refused in the words every SDK uses, templates, kv, log lines.

use ruled::{Call, Config, Error, Template};

fn init() {
    ruled::plugin("nt", "0.1.0");
    ruled::condition("above", |cfg: &Config| {
        let path = cfg.require_str("path")?.to_string();
        let above = cfg.require_f64("above")?;
        Ok(Box::new(move |c: &Call| Ok(c.event.float(&path).map_or(false, |v| v > above))))
    });
    ruled::action("notify", |cfg: &Config| {
        let topic = cfg.require_str("topic")?.to_string();
        let payload = Template::json(cfg, "payload")?;
        Ok(Box::new(move |c: &Call| {
            ruled::publish(&topic, &payload.render(c)).map_err(|s| Error::new(format!("notify: status {}", s.0)))?;
            Ok(Vec::new())
        }))
    })
    .needs("publish");
    ruled::action("count", |_: &Config| {
        Ok(Box::new(|c: &Call| {
            let n = ruled::kv_get("n").ok().flatten().map_or(0, |v| String::from_utf8_lossy(&v).parse::<i64>().unwrap_or(0)) + 1;
            ruled::kv_set("n", n.to_string().as_bytes()).map_err(|s| Error::new(format!("kv {}", s.0)))?;
            ruled::log(ruled::INFO, &format!("{} {}", c.topic(), n));
            Ok(n.to_string().into_bytes())
        }))
    });
}

ruled::main!(init);

#[cfg(test)]
mod tests {
    use ruled::native::Native;

    #[test]
    fn above_notify_count() {
        let mut n = Native::new(super::init);
        assert_eq!(n.when("above", r#"{"path":"value","above":30}"#, r#"{"value":31.5}"#).unwrap(), true);
        assert_eq!(n.when("above", r#"{"path":"value","above":30}"#, r#"{"value":20}"#).unwrap(), false);
        let e = n.when("above", r#"{"path":"value","above":"x"}"#, r#"{"value":20}"#).unwrap_err();
        assert_eq!(e.text, r#"above: config "above" must be a number, not the string "x""#);
        n.act("notify", r#"{"topic":"t.alerts","payload":{"v":"{{value}}","s":"{{s}}","x":[1,"é\u00e9"]}}"#, r#"{"value":31.5,"s":"a\"b"}"#).unwrap();
        assert_eq!(n.published.len(), 1);
        assert_eq!(String::from_utf8_lossy(&n.published[0].1), r#"{"s":"a\"b","v":31.5,"x":[1,"éé"]}"#);
        assert_eq!(n.act("count", "", r#"{"topic":"tick"}"#).unwrap(), b"1");
        assert_eq!(n.act("count", "", r#"{"topic":"tick"}"#).unwrap(), b"2");
        assert_eq!(n.logs.last().unwrap().1, "tick 2");
        assert_eq!(n.kv.get("n").unwrap(), b"2");
    }
}

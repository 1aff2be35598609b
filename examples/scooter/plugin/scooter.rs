//! The scooter example's own plugin in Rust: the same plugin as index.ts
//! (AssemblyScript, the build the rules load) and main.go (Go).
//! plugin_test.go runs one table through every build, and
//! examples/scooter's TestScenarios runs the scenarios with this one too.
//! Build: sdk/rust/build.sh scooter-rs.wasm examples/scooter/plugin/scooter.rs

use ruled::{Call, Config, Error};

/// float_text writes a battery level as the other builds do: a whole
/// number without a fraction, else its shortest decimal.
fn float_text(x: f64) -> String {
    if x == x.trunc() && x.abs() < 1e15 {
        return format!("{}", x as i64);
    }
    format!("{}", x)
}

fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn init() {
    ruled::plugin("scooter", "1.0.0");
    ruled::condition("moving_while_locked", |cfg: &Config| {
        let min = cfg.view.float("min_speed").unwrap_or(3.0);
        Ok(Box::new(move |c: &Call| {
            Ok(c.event.bool("locked").unwrap_or(false) && c.event.float("speed").unwrap_or(0.0) >= min)
        }))
    })
    .doc("a locked scooter moving at min_speed km/h or more")
    .example("{\"min_speed\":3}");

    ruled::action("remember", |_: &Config| {
        Ok(Box::new(|c: &Call| {
            let (vehicle, battery) = match (c.event.str("vehicle"), c.event.float("battery")) {
                (Some(v), Some(b)) => (v, b),
                _ => return Ok(Vec::new()),
            };
            ruled::kv_set(&format!("battery:{}", vehicle), float_text(battery).as_bytes())
                .map_err(|s| Error::new(format!("kv_set: status {}", s.0)))?;
            Ok(Vec::new())
        }))
    })
    .doc("remember the scooter's latest battery level")
    .needs("kv");

    ruled::action("limit_speed", |cfg: &Config| {
        let below = cfg.view.float("below").unwrap_or(20.0);
        let max_speed = cfg.view.int("max_speed").unwrap_or(15);
        Ok(Box::new(move |c: &Call| {
            let vehicle = c.event.str("vehicle").unwrap_or("");
            let level = match ruled::kv_get(&format!("battery:{}", vehicle)) {
                Ok(Some(b)) => String::from_utf8_lossy(&b).into_owned(),
                Ok(None) => {
                    ruled::log(ruled::INFO, &format!("no battery level known for {}; no limit", vehicle));
                    return Ok(b"recovered".to_vec());
                }
                Err(s) => return Err(Error::new(format!("kv_get: status {}", s.0))),
            };
            if level.parse::<f64>().unwrap_or(0.0) >= below {
                ruled::log(ruled::INFO, &format!("battery of {} recovered to {}%; no limit", vehicle, level));
                return Ok(b"recovered".to_vec());
            }
            let payload = format!(
                "{{\"vehicle\":{},\"max_speed\":{},\"key\":{}}}",
                json_string(vehicle),
                max_speed,
                json_string(c.key())
            );
            ruled::publish("scooter.cmd.limit", payload.as_bytes()).map_err(|s| Error::new(format!("publish: status {}", s.0)))?;
            Ok(format!("limited to {} km/h", max_speed).into_bytes())
        }))
    })
    .doc("limit the speed if the battery is still below a level")
    .example("{\"below\":20,\"max_speed\":15}")
    .needs("kv")
    .needs("publish");

    ruled::action("alarm", |_: &Config| {
        Ok(Box::new(|c: &Call| {
            let payload = format!("{{\"vehicle\":{},\"round\":{}}}", json_string(c.event.str("vehicle").unwrap_or("")), c.pass + 1);
            ruled::publish("scooter.cmd.alarm", payload.as_bytes()).map_err(|s| Error::new(format!("publish: status {}", s.0)))?;
            Ok(Vec::new())
        }))
    })
    .doc("sound the scooter's alarm")
    .needs("publish");
}

ruled::main!(init);

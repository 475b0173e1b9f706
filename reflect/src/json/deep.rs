//! JSON text read back into a `serde_json::Value` with an explicit stack, so that trees nested deeper than serde_json's 128 levels convert too.

/// Parses JSON text (as this module writes it) into a `serde_json::Value` with an explicit
/// stack: serde_json's own parser stops at 128 levels, and a decoded tree nests up to
/// `MAX_DEPTH`. Strings and numbers are still read by serde_json.
pub(super) fn parse_deep(text: &str) -> Result<serde_json::Value, serde_json::Error> {
    use serde_json::{Map, Number, Value as J};
    enum Open {
        Array(Vec<J>),
        Object(Map<String, J>, String),
    }
    let bytes = text.as_bytes();
    let mut pos = 0;
    let error =
        |what: &str, pos: usize| <serde_json::Error as serde::de::Error>::custom(format!("{what} at byte {pos}"));
    let skip_ws = |pos: &mut usize| {
        while bytes.get(*pos).is_some_and(u8::is_ascii_whitespace) {
            *pos += 1;
        }
    };
    // A string token at `pos`, handed to serde_json for its escapes.
    let string = |pos: &mut usize| -> Result<String, serde_json::Error> {
        let start = *pos;
        if bytes.get(start) != Some(&b'"') {
            return Err(error("expected a string", start));
        }
        let mut i = start + 1;
        loop {
            match bytes.get(i) {
                Some(b'\\') => i += 2,
                Some(b'"') => break,
                Some(_) => i += 1,
                None => return Err(error("unterminated string", start)),
            }
        }
        *pos = i + 1;
        serde_json::from_str(&text[start..=i])
    };
    // An object key and its colon.
    let key = |pos: &mut usize| -> Result<String, serde_json::Error> {
        skip_ws(pos);
        let k = string(pos)?;
        skip_ws(pos);
        if bytes.get(*pos) != Some(&b':') {
            return Err(error("expected ':'", *pos));
        }
        *pos += 1;
        Ok(k)
    };
    let mut stack: Vec<Open> = Vec::new();
    loop {
        skip_ws(&mut pos);
        let mut value = match bytes.get(pos) {
            Some(b'{') => {
                pos += 1;
                skip_ws(&mut pos);
                if bytes.get(pos) == Some(&b'}') {
                    pos += 1;
                    J::Object(Map::new())
                } else {
                    let k = key(&mut pos)?;
                    stack.push(Open::Object(Map::new(), k));
                    continue;
                }
            }
            Some(b'[') => {
                pos += 1;
                skip_ws(&mut pos);
                if bytes.get(pos) == Some(&b']') {
                    pos += 1;
                    J::Array(Vec::new())
                } else {
                    stack.push(Open::Array(Vec::new()));
                    continue;
                }
            }
            Some(b'"') => J::String(string(&mut pos)?),
            Some(_) => {
                let start = pos;
                while bytes.get(pos).is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.')) {
                    pos += 1;
                }
                match &text[start..pos] {
                    "true" => J::Bool(true),
                    "false" => J::Bool(false),
                    "null" => J::Null,
                    number => J::Number(serde_json::from_str::<Number>(number)?),
                }
            }
            None => return Err(error("expected a value", pos)),
        };
        // Add the value to the innermost open container, closing containers as they end.
        loop {
            skip_ws(&mut pos);
            match stack.last_mut() {
                None if pos == bytes.len() => return Ok(value),
                None => return Err(error("trailing characters", pos)),
                Some(Open::Array(items)) => {
                    items.push(value);
                    match bytes.get(pos) {
                        Some(b',') => {
                            pos += 1;
                            break;
                        }
                        Some(b']') => {
                            pos += 1;
                            let Some(Open::Array(items)) = stack.pop() else { unreachable!() };
                            value = J::Array(items);
                        }
                        _ => return Err(error("expected ',' or ']'", pos)),
                    }
                }
                Some(Open::Object(map, k)) => {
                    map.insert(std::mem::take(k), value);
                    match bytes.get(pos) {
                        Some(b',') => {
                            pos += 1;
                            *k = key(&mut pos)?;
                            break;
                        }
                        Some(b'}') => {
                            pos += 1;
                            let Some(Open::Object(map, _)) = stack.pop() else { unreachable!() };
                            value = J::Object(map);
                        }
                        _ => return Err(error("expected ',' or '}'", pos)),
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_deep_reads_what_serde_json_reads() {
        let cases = [
            r#"{}"#,
            r#"[]"#,
            r#"{"a":1,"b":[true,false,null,-0.0,1e300,0.1,"x\"y\\z\u00e9\n"],"c":{"d":{}},"":[[],[{}]]}"#,
            r#""NaN""#,
            r#"-12"#,
            "18446744073709551615",
            " { \"a\" : [ 1 , 2 ] ,\n  \"b\" : { } } ",
            r#"{"a":1,"a":2}"#,
        ];
        for text in cases {
            let want: serde_json::Value = serde_json::from_str(text).unwrap();
            assert_eq!(parse_deep(text).unwrap(), want, "{text}");
        }
        let deep = format!("{}1{}", "[".repeat(5000), "]".repeat(5000));
        let mut v = &parse_deep(&deep).unwrap();
        for _ in 0..5000 {
            v = &v.as_array().unwrap()[0];
        }
        assert_eq!(v, &serde_json::json!(1));
        for bad in ["", "[", "[1,]", "{\"a\"}", "{\"a\":1", "[1] x", "\"abc", "{1:2}", "tru"] {
            assert!(parse_deep(bad).is_err(), "{bad:?}");
        }
    }
}

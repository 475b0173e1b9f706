//! Skipping a field named in its message's `reserved` names: its value is read for shape only
//! and nothing is written, as protobuf's text parser does (text_format.cc's `SkipFieldValue`
//! and `SkipFieldMessage`).

use super::{err, is_ident_start, Parser, Result};

impl Parser<'_, '_, '_> {
    /// The value after a reserved field's name. Its shape says what it is, as the name
    /// cannot: after `:`, a scalar or a `[...]` list unless `{` or `<` follows; else a
    /// message.
    pub(super) fn skip_reserved_value(&mut self) -> Result<()> {
        if self.eat(b':') && !matches!(self.peek(), Some(b'{' | b'<')) {
            return self.skip_value();
        }
        self.skip_message()
    }

    /// One more level of nesting, within the limit: a skipped value nests as a parsed one
    /// does, so hostile nesting cannot exhaust the stack here either.
    fn enter_skipped(&mut self) -> Result<()> {
        if self.depth > self.max_depth {
            return err(self.pos, format!("messages nest deeper than the limit of {}", self.max_depth));
        }
        self.depth += 1;
        Ok(())
    }

    /// `{ fields }` or `< fields >`: any names (no schema is known for them), each field's
    /// value skipped by its shape.
    fn skip_message(&mut self) -> Result<()> {
        self.enter_skipped()?;
        let close = self.open()?;
        while !matches!(self.peek(), Some(b'}' | b'>')) {
            if self.eat(b'[') {
                let at = self.pos - 1;
                self.bracketed(at)?;
            } else {
                self.ident()?;
            }
            self.skip_reserved_value()?;
            if !self.eat(b';') {
                self.eat(b',');
            }
        }
        self.expect(close)?;
        self.depth -= 1;
        Ok(())
    }

    /// Adjacent strings; a `[...]` list of values and messages; or a number or identifier,
    /// after an optional `-` (then only `inf`, `infinity` or `nan`, in any case).
    fn skip_value(&mut self) -> Result<()> {
        self.enter_skipped()?;
        match self.peek() {
            Some(b'"' | b'\'') => {
                self.strings()?;
            }
            Some(b'[') => {
                self.pos += 1;
                if !self.eat(b']') {
                    loop {
                        if matches!(self.peek(), Some(b'{' | b'<')) {
                            self.skip_message()?;
                        } else {
                            self.skip_value()?;
                        }
                        if self.eat(b']') {
                            break;
                        }
                        self.expect(b',')?;
                    }
                }
            }
            _ => {
                let negative = self.eat(b'-');
                let at = self.pos;
                if self.peek().is_some_and(is_ident_start) {
                    let name = self.ident()?.to_ascii_lowercase();
                    if negative && !matches!(name.as_str(), "inf" | "infinity" | "nan") {
                        return err(at, format!("expected a number after '-', found {name}"));
                    }
                } else if self.peek().is_some_and(|c| c.is_ascii_digit() || c == b'.') {
                    self.number_token()?;
                } else {
                    let found = self.found();
                    return err(at, format!("expected a value, found {found}"));
                }
            }
        }
        self.depth -= 1;
        Ok(())
    }
}

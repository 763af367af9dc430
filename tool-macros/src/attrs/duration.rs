//! Durations as the attribute writes them (`"500ms"`, `"5s"`, `"2m"`).

/// `"500ms"`, `"5s"`, `"2m"` into milliseconds; zero is refused, `zero`
/// saying why.
pub(super) fn parse_duration(text: &str, zero: &str) -> Result<u64, String> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = text.split_at(digits);
    if number.is_empty() {
        return Err("it must start with a whole number".into());
    }
    let value: u64 = number.parse().map_err(|_| "the number is too large".to_owned())?;
    let factor = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "" => return Err("it needs a unit: `ms`, `s` or `m`".into()),
        other => return Err(format!("unknown unit `{other}`; use `ms`, `s` or `m`")),
    };
    let millis = value.checked_mul(factor).ok_or_else(|| "the duration is too large".to_owned())?;
    if millis == 0 {
        return Err(zero.to_owned());
    }
    Ok(millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn millis(text: &str) -> Result<u64, String> {
        parse_duration(text, "zero")
    }

    #[test]
    fn durations_in_each_unit() {
        assert_eq!(millis("500ms"), Ok(500));
        assert_eq!(millis("5s"), Ok(5_000));
        assert_eq!(millis("2m"), Ok(120_000));
    }

    #[test]
    fn bad_durations_say_why() {
        assert!(millis("5").unwrap_err().contains("needs a unit"));
        assert!(millis("5h").unwrap_err().contains("unknown unit `h`"));
        assert!(millis("s").unwrap_err().contains("whole number"));
        assert!(millis("0s").unwrap_err().contains("zero"));
        assert!(millis("1.5s").unwrap_err().contains("unknown unit `.5s`"));
        assert!(millis("99999999999999999999s").is_err());
    }
}

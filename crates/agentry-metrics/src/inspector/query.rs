//! The query string of `/events` and `/snapshot.json` as a [`SnapshotQuery`]: `filter`,
//! `sort`, `offset`, `limit`, percent-decoded; anything malformed is refused (the endpoint
//! answers 400), never guessed at.

use agentry::snapshot::{SnapshotQuery, SortBy};

/// The most agents one snapshot of the inspector returns.
pub const MAX_LIMIT: usize = 1000;

/// The longest filter accepted (bytes, decoded).
const MAX_FILTER: usize = 256;

/// Why a query string was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum QueryError {
    /// A `%` not followed by two hex digits, or bytes that are not UTF-8 once decoded.
    BadEncoding,
    /// A parameter this endpoint does not know.
    UnknownParameter(String),
    /// A parameter given twice.
    Repeated(&'static str),
    /// `sort` names no order.
    UnknownSort(String),
    /// `offset` or `limit` is not a number, or `limit` is 0 or above [`MAX_LIMIT`].
    BadNumber(&'static str),
    /// The filter is longer than `MAX_FILTER`.
    FilterTooLong,
}

/// The snapshot query `query` asks for.
pub(crate) fn parse(query: &str) -> Result<SnapshotQuery, QueryError> {
    let mut out = SnapshotQuery::new();
    let mut seen: Vec<&'static str> = Vec::new();
    let mut once = |name: &'static str| {
        if seen.contains(&name) {
            return Err(QueryError::Repeated(name));
        }
        seen.push(name);
        Ok(())
    };
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = decode(value)?;
        match decode(key)?.as_str() {
            "filter" => {
                once("filter")?;
                if value.len() > MAX_FILTER {
                    return Err(QueryError::FilterTooLong);
                }
                out = out.filter(&value);
            }
            "sort" => {
                once("sort")?;
                let sort = SortBy::from_name(&value).ok_or(QueryError::UnknownSort(value))?;
                out = out.sort(sort);
            }
            "offset" => {
                once("offset")?;
                let offset = value.parse().map_err(|_| QueryError::BadNumber("offset"))?;
                out = out.offset(offset);
            }
            "limit" => {
                once("limit")?;
                let limit: usize = value.parse().map_err(|_| QueryError::BadNumber("limit"))?;
                if limit == 0 || limit > MAX_LIMIT {
                    return Err(QueryError::BadNumber("limit"));
                }
                out = out.limit(limit);
            }
            other => return Err(QueryError::UnknownParameter(other.to_owned())),
        }
    }
    Ok(out)
}

/// Percent-decodes `s` (`+` is a space, as forms send it).
fn decode(s: &str) -> Result<String, QueryError> {
    let mut bytes = Vec::with_capacity(s.len());
    let mut rest = s.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        rest = tail;
        match b {
            b'+' => bytes.push(b' '),
            b'%' => {
                let hex = |c: u8| (c as char).to_digit(16);
                let (Some(hi), Some(lo)) = (
                    rest.first().copied().and_then(hex),
                    rest.get(1).copied().and_then(hex),
                ) else {
                    return Err(QueryError::BadEncoding);
                };
                bytes.push((hi * 16 + lo) as u8);
                rest = &rest[2..];
            }
            b => bytes.push(b),
        }
    }
    String::from_utf8(bytes).map_err(|_| QueryError::BadEncoding)
}

#[cfg(test)]
mod tests;

//! Named counts for the report (what each driver did), in the order they first occur.

use std::fmt;

/// Counts by name, kept in first-seen order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally(Vec<(String, u64)>);

impl Tally {
    /// Adds `n` to `name`.
    pub fn add(&mut self, name: impl AsRef<str>, n: u64) {
        let name = name.as_ref();
        match self.0.iter_mut().find(|(k, _)| k == name) {
            Some((_, v)) => *v += n,
            None => self.0.push((name.to_owned(), n)),
        }
    }

    /// Adds one to `name`.
    pub fn one(&mut self, name: impl AsRef<str>) {
        self.add(name, 1);
    }

    /// What happened since `earlier`, for counts that only grow: each count less its value
    /// in `earlier`.
    pub fn since(&self, earlier: &Tally) -> Tally {
        Tally(
            self.0
                .iter()
                .map(|(k, v)| {
                    let before = earlier
                        .0
                        .iter()
                        .find(|(e, _)| e == k)
                        .map_or(0, |(_, n)| *n);
                    (k.clone(), v.saturating_sub(before))
                })
                .collect(),
        )
    }

    /// Adds every count of `other`.
    pub fn merge(&mut self, other: &Tally) {
        for (k, v) in &other.0 {
            self.add(k, *v);
        }
    }

    /// The counts whose name starts with `prefix`, prefix removed.
    pub fn with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = (&'a str, u64)> {
        self.0
            .iter()
            .filter_map(move |(k, v)| k.strip_prefix(prefix).map(|rest| (rest, *v)))
    }
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (k, v) in &self.0 {
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            write!(f, "{k} {v}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Tally;

    #[test]
    fn counts_add_up_in_first_seen_order() {
        let mut a = Tally::default();
        a.one("b");
        a.add("a", 2);
        a.one("b");
        let mut b = Tally::default();
        b.add("c", 5);
        b.one("a");
        a.merge(&b);
        assert_eq!(a.to_string(), "b 2, a 3, c 5");
        assert_eq!(a.with_prefix("").map(|(_, n)| n).sum::<u64>(), 10);
        let mut later = a.clone();
        later.add("a", 4);
        assert_eq!(later.since(&a).to_string(), "b 0, a 4, c 0");
    }
}

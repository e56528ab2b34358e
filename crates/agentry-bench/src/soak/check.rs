//! The equations a soak phase checks: two named sides and how they must relate. Every check
//! is recorded, met or not, so the report shows both sides of each.

use std::fmt;

/// How the two sides of an [`Equation`] must relate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relation {
    /// `left == right`.
    Eq,
    /// `left <= right`.
    Le,
}

/// One checked equation.
#[derive(Clone, Debug)]
pub struct Equation {
    /// The part of the soak that checked it (`core`, `tcp`, `nats`, `rss`).
    pub area: &'static str,
    /// What the equation states, in words and symbols.
    pub what: String,
    /// The left side's value.
    pub left: u64,
    /// The right side's value.
    pub right: u64,
    /// How they must relate.
    pub relation: Relation,
    /// For an equation over many items (every agent, every connection): the first items
    /// that broke it, with their numbers.
    pub offenders: Vec<String>,
}

impl Equation {
    /// True if the relation holds and no item broke it.
    pub fn holds(&self) -> bool {
        self.offenders.is_empty()
            && match self.relation {
                Relation::Eq => self.left == self.right,
                Relation::Le => self.left <= self.right,
            }
    }
}

impl fmt::Display for Equation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mark = if self.holds() { "ok  " } else { "FAIL" };
        let op = match self.relation {
            Relation::Eq => "==",
            Relation::Le => "<=",
        };
        write!(
            f,
            "[{mark}] {:<5} {}: {} {op} {}",
            self.area, self.what, self.left, self.right
        )?;
        for o in &self.offenders {
            write!(f, "\n         - {o}")?;
        }
        Ok(())
    }
}

/// At most this many offenders are kept per equation (the count is always exact).
const MAX_OFFENDERS: usize = 8;

/// The equations of one phase.
#[derive(Clone, Debug, Default)]
pub struct Checks {
    items: Vec<Equation>,
}

impl Checks {
    /// Records `left == right`.
    pub fn eq(&mut self, area: &'static str, what: impl Into<String>, left: u64, right: u64) {
        self.push(area, what.into(), left, right, Relation::Eq, Vec::new());
    }

    /// Records `left <= right`.
    pub fn le(&mut self, area: &'static str, what: impl Into<String>, left: u64, right: u64) {
        self.push(area, what.into(), left, right, Relation::Le, Vec::new());
    }

    /// Records an equation over `total` items: `items that hold == total`, with the first
    /// offenders described.
    pub fn for_all(
        &mut self,
        area: &'static str,
        what: impl Into<String>,
        total: u64,
        offenders: Vec<String>,
    ) {
        let broken = offenders.len() as u64;
        let mut kept = offenders;
        if kept.len() > MAX_OFFENDERS {
            let more = kept.len() - MAX_OFFENDERS;
            kept.truncate(MAX_OFFENDERS);
            kept.push(format!("… and {more} more"));
        }
        self.push(
            area,
            format!("{} (items that hold == items)", what.into()),
            total - broken,
            total,
            Relation::Eq,
            kept,
        );
    }

    fn push(
        &mut self,
        area: &'static str,
        what: String,
        left: u64,
        right: u64,
        relation: Relation,
        offenders: Vec<String>,
    ) {
        self.items.push(Equation {
            area,
            what,
            left,
            right,
            relation,
            offenders,
        });
    }

    /// Every equation, in the order checked.
    pub fn items(&self) -> &[Equation] {
        &self.items
    }

    /// The equations that do not hold.
    pub fn failures(&self) -> impl Iterator<Item = &Equation> {
        self.items.iter().filter(|e| !e.holds())
    }

    /// Appends `other`'s equations.
    pub fn extend(&mut self, other: Checks) {
        self.items.extend(other.items);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equations_hold_or_fail_with_both_sides_shown() {
        let mut c = Checks::default();
        c.eq("core", "a == b", 3, 3);
        c.le("nats", "received <= sent", 5, 4);
        c.for_all(
            "core",
            "per agent",
            10,
            (0..9).map(|i| format!("agent {i}")).collect(),
        );
        let failed: Vec<String> = c.failures().map(|e| e.what.clone()).collect();
        assert_eq!(failed.len(), 2);
        let shown = c.items()[2].to_string();
        assert!(shown.starts_with("[FAIL] core  per agent (items that hold == items): 1 == 10"));
        assert!(shown.contains("… and 1 more"));
        assert!(c.items()[0].to_string().starts_with("[ok  ]"));
    }
}

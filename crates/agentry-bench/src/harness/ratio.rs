//! Ratios between cases measured in the same run: each case that names baselines (a peer
//! framework, a plain std::net echo) gets ours / theirs per phase, in units per second.

use crate::harness::{CaseReport, CaseStatus};

/// Fills [`PhaseResult::ratios`](crate::harness::PhaseResult::ratios) of every measured case
/// of one benchmark whose baselines were measured too.
///
/// Phases are matched by name; a baseline with a single phase also matches a case with a
/// single phase of another name (a peer that only has "total").
pub fn apply_ratios(reports: &mut [CaseReport]) {
    for i in 0..reports.len() {
        let mut found = Vec::new();
        if let CaseStatus::Measured(ours) = &reports[i].status {
            for baseline in &reports[i].baselines {
                let theirs = reports
                    .iter()
                    .find(|other| baseline.matches(&reports[i].meta.label, &other.meta))
                    .and_then(CaseReport::measured);
                let Some(theirs) = theirs else { continue };
                for (index, phase) in ours.phases.iter().enumerate() {
                    let single = ours.phases.len() == 1 && theirs.phases.len() == 1;
                    let other = theirs
                        .phases
                        .iter()
                        .find(|p| p.spec.name == phase.spec.name)
                        .or_else(|| theirs.phases.first().filter(|_| single));
                    let ratio = phase.per_sec().zip(other.and_then(|o| o.per_sec()));
                    if let Some((ours_rate, their_rate)) = ratio {
                        found.push((index, baseline.to_string(), ours_rate / their_rate));
                    }
                }
            }
        }
        if let CaseStatus::Measured(ours) = &mut reports[i].status {
            for (index, name, ratio) in found {
                ours.phases[index].ratios.push((name, ratio));
            }
        }
    }
}

#[cfg(test)]
mod tests;

//! What a run reports: medians over rounds, the printed tables, Barracuda's targets against its
//! peers, and the JSON file.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::engines::EngineKind;
use crate::workload::Figures;
use crate::{Config, Phase};

/// The median of `xs` (the mean of the middle two for an even count); `None` when empty.
pub(crate) fn median(xs: &mut [f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let mid = xs.len() / 2;
    Some(if xs.len() % 2 == 1 {
        xs[mid]
    } else {
        f64::midpoint(xs[mid - 1], xs[mid])
    })
}

/// Each field's median over `rounds`.
pub(crate) fn median_figures(rounds: &[Figures]) -> Figures {
    let of = |field: fn(&Figures) -> Option<f64>| {
        let mut xs: Vec<f64> = rounds.iter().filter_map(field).collect();
        median(&mut xs)
    };
    Figures {
        per_s: of(|f| Some(f.per_s)).unwrap_or(0.0),
        ops: of(|f| Some(f.ops as f64)).unwrap_or(0.0) as u64,
        seconds: of(|f| Some(f.seconds)).unwrap_or(0.0),
        p50_us: of(|f| f.p50_us),
        p99_us: of(|f| f.p99_us),
        p999_us: of(|f| f.p999_us),
    }
}

/// `x` rounded, with thousands separators.
pub(crate) fn thousands(x: f64) -> String {
    let digits = format!("{:.0}", x.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if x < 0.0 {
        out.insert(0, '-');
    }
    out
}

/// What a target compares.
#[derive(Clone, Copy, Debug)]
enum Bound {
    /// Barracuda's rate at least this many times the peer's.
    AtLeastTimes(EngineKind, f64),
    /// Barracuda's p99.9 latency at most this many µs.
    P999AtMostUs(f64),
    /// Barracuda's rate at least this many times its own rate in another phase (the peers'
    /// own ratios are shown beside it; the other Barracuda configuration is judged on its own
    /// line, not listed as a peer).
    ScalesAtLeast(Phase, f64),
}

/// Barracuda's targets against its peers (the list).
const TARGETS: [(Phase, Bound); 7] = [
    (Phase::GetWarm, Bound::AtLeastTimes(EngineKind::Lmdb, 0.9)),
    (
        Phase::GetQuarter,
        Bound::AtLeastTimes(EngineKind::Redb, 1.2),
    ),
    (Phase::GetQuarter, Bound::P999AtMostUs(50.0)),
    (Phase::Scan100, Bound::AtLeastTimes(EngineKind::Lmdb, 0.9)),
    (Phase::SeqLoad, Bound::AtLeastTimes(EngineKind::Lmdb, 0.8)),
    (
        Phase::RandomLoad,
        Bound::AtLeastTimes(EngineKind::Rocksdb, 1.0),
    ),
    // Issue 8: 16 committing threads at least 10 x one.
    (Phase::Commit16, Bound::ScalesAtLeast(Phase::Commit1, 10.0)),
];

/// One target's outcome.
#[derive(Debug, Serialize)]
pub(crate) struct TargetOutcome {
    /// The target, as text.
    pub(crate) target: String,
    /// Barracuda / peer (rates), or Barracuda's p99.9 in µs.
    pub(crate) value: Option<f64>,
    /// Whether it is met; `None` when not measured in this run.
    pub(crate) met: Option<bool>,
    /// Why it could not be judged, or the figures it was judged on.
    pub(crate) detail: String,
}

/// Judges every target on the medians, for each Barracuda configuration measured.
pub(crate) fn judge(
    medians: &BTreeMap<EngineKind, BTreeMap<Phase, Figures>>,
) -> Vec<TargetOutcome> {
    let ours: Vec<EngineKind> = [EngineKind::Barracuda, EngineKind::Barracuda4k]
        .into_iter()
        .filter(|k| medians.contains_key(k))
        .collect();
    // Nothing of ours measured: the targets still print, as not measured.
    let ours = if ours.is_empty() {
        vec![EngineKind::Barracuda]
    } else {
        ours
    };
    ours.iter()
        .flat_map(|&us| {
            TARGETS
                .iter()
                .map(move |&(phase, bound)| judge_one(medians, us, phase, bound))
        })
        .collect()
}

/// One target for the Barracuda configuration `us`.
fn judge_one(
    medians: &BTreeMap<EngineKind, BTreeMap<Phase, Figures>>,
    us: EngineKind,
    phase: Phase,
    bound: Bound,
) -> TargetOutcome {
    let mine = medians.get(&us).and_then(|m| m.get(&phase));
    let who = if us == EngineKind::Barracuda {
        String::new()
    } else {
        format!("{}: ", us.name())
    };
    match bound {
        Bound::AtLeastTimes(peer, factor) => {
            let target = format!(
                "{who}{} {} >= {factor:.1} x {}",
                phase.name(),
                phase.unit(),
                peer.name()
            );
            let theirs = medians.get(&peer).and_then(|m| m.get(&phase));
            match (mine, theirs) {
                (Some(m), Some(t)) if t.per_s > 0.0 => {
                    let ratio = m.per_s / t.per_s;
                    TargetOutcome {
                        target,
                        value: Some(ratio),
                        met: Some(ratio >= factor),
                        detail: format!("{} / {}", thousands(m.per_s), thousands(t.per_s)),
                    }
                }
                _ => TargetOutcome {
                    target,
                    value: None,
                    met: None,
                    detail: format!(
                        "not measured: needs {} and {} with phase {}",
                        us.name(),
                        peer.name(),
                        phase.name()
                    ),
                },
            }
        }
        Bound::ScalesAtLeast(base, factor) => {
            let target = format!(
                "{who}{} {} >= {factor:.1} x {}",
                phase.name(),
                phase.unit(),
                base.name()
            );
            let ratio_of = |e: EngineKind| {
                let m = medians.get(&e)?;
                let (top, bottom) = (m.get(&phase)?, m.get(&base)?);
                (bottom.per_s > 0.0).then(|| (top.per_s / bottom.per_s, top.per_s, bottom.per_s))
            };
            let peers: Vec<String> = medians
                .keys()
                .filter(|&&e| !matches!(e, EngineKind::Barracuda | EngineKind::Barracuda4k))
                .filter_map(|&e| ratio_of(e).map(|(r, _, _)| format!("{} {r:.2}", e.name())))
                .collect();
            let peers = if peers.is_empty() {
                String::new()
            } else {
                format!("; peers: {}", peers.join(", "))
            };
            match ratio_of(us) {
                Some((ratio, top, bottom)) => TargetOutcome {
                    target,
                    value: Some(ratio),
                    met: Some(ratio >= factor),
                    detail: format!("{} / {}{peers}", thousands(top), thousands(bottom)),
                },
                None => TargetOutcome {
                    target,
                    value: None,
                    met: None,
                    detail: format!(
                        "not measured: needs {} with phases {} and {}",
                        us.name(),
                        base.name(),
                        phase.name()
                    ),
                },
            }
        }
        Bound::P999AtMostUs(limit) => {
            let target = format!("{who}{} p99.9 <= {limit:.0} us", phase.name());
            match mine.and_then(|m| m.p999_us) {
                Some(p) => TargetOutcome {
                    target,
                    value: Some(p),
                    met: Some(p <= limit),
                    detail: format!("{p:.1} us"),
                },
                None => TargetOutcome {
                    target,
                    value: None,
                    met: None,
                    detail: format!(
                        "not measured: needs {} with phase {}",
                        us.name(),
                        phase.name()
                    ),
                },
            }
        }
    }
}

/// The printed table: one row per figure, one column per engine.
pub(crate) fn table(
    cfg: &Config,
    medians: &BTreeMap<EngineKind, BTreeMap<Phase, Figures>>,
) -> String {
    type Cell = fn(&Figures) -> Option<String>;
    let rate: Cell = |f| Some(thousands(f.per_s));
    let p50: Cell = |f| f.p50_us.map(|x| format!("{x:.1}"));
    let p99: Cell = |f| f.p99_us.map(|x| format!("{x:.1}"));
    let p999: Cell = |f| f.p999_us.map(|x| format!("{x:.1}"));
    let main_rows: [(String, Phase, Cell); 9] = [
        ("seq_load rows/s".into(), Phase::SeqLoad, rate),
        ("random_load rows/s".into(), Phase::RandomLoad, rate),
        ("bulk_load rows/s".into(), Phase::BulkLoad, rate),
        ("get_warm ops/s".into(), Phase::GetWarm, rate),
        ("get_quarter ops/s".into(), Phase::GetQuarter, rate),
        ("get_quarter p99.9 µs".into(), Phase::GetQuarter, p999),
        ("scan_100 scans/s".into(), Phase::Scan100, rate),
        ("commit_1 commits/s".into(), Phase::Commit1, rate),
        ("commit_16 commits/s".into(), Phase::Commit16, rate),
    ];
    let mut latency_rows: Vec<(String, Phase, Cell)> = Vec::new();
    for phase in [
        Phase::GetWarm,
        Phase::GetQuarter,
        Phase::Scan100,
        Phase::Commit1,
        Phase::Commit16,
    ] {
        for (name, cell) in [("p50", p50), ("p99", p99), ("p99.9", p999)] {
            latency_rows.push((format!("{} {name} µs", phase.name()), phase, cell));
        }
    }
    let mut out = String::new();
    let mut block = |title: &str, rows: &[(String, Phase, Cell)]| {
        let rows: Vec<_> = rows.iter().filter(|(_, p, _)| cfg.has(*p)).collect();
        if rows.is_empty() {
            return;
        }
        let _ = writeln!(out, "{title}");
        let _ = write!(out, "{:<24}", "");
        for e in &cfg.engines {
            let _ = write!(out, "{:>14}", e.name());
        }
        out.push('\n');
        for (label, phase, cell) in rows {
            let _ = write!(out, "{label:<24}");
            for e in &cfg.engines {
                let text = medians
                    .get(e)
                    .and_then(|m| m.get(phase))
                    .and_then(cell)
                    .unwrap_or_else(|| "-".into());
                let _ = write!(out, "{text:>14}");
            }
            out.push('\n');
        }
        out.push('\n');
    };
    block(
        &format!(
            "figures (median of {} round{})",
            cfg.rounds,
            if cfg.rounds == 1 { "" } else { "s" }
        ),
        &main_rows,
    );
    block("latencies (median of rounds)", &latency_rows);
    out
}

/// The JSON file's content.
#[derive(Serialize)]
pub(crate) struct Report<'a> {
    pub(crate) config: &'a Config,
    pub(crate) loadavg_start: String,
    pub(crate) loadavg_end: String,
    /// engine → phase → the median and each round's figures.
    pub(crate) engines: BTreeMap<&'static str, EngineReport>,
    pub(crate) targets: Vec<TargetOutcome>,
}

/// One engine's part of the JSON file.
#[derive(Serialize)]
pub(crate) struct EngineReport {
    pub(crate) cache: &'static str,
    pub(crate) phases: BTreeMap<&'static str, PhaseReport>,
}

/// One phase's figures in the JSON file.
#[derive(Serialize)]
pub(crate) struct PhaseReport {
    pub(crate) median: Figures,
    pub(crate) rounds: Vec<Figures>,
}

/// The first three fields of /proc/loadavg (1, 5 and 15 minutes), or why not.
pub(crate) fn loadavg() -> String {
    match std::fs::read_to_string("/proc/loadavg") {
        Ok(s) => s.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
        Err(e) => format!("unknown ({e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }

    #[test]
    fn scaling_is_judged_against_our_own_base_phase_with_the_peers_ratios_beside_it() {
        let rate = |per_s| Figures {
            per_s,
            ..Figures::default()
        };
        let mut medians = BTreeMap::new();
        medians.insert(
            EngineKind::Barracuda,
            BTreeMap::from([
                (Phase::Commit1, rate(5000.0)),
                (Phase::Commit16, rate(25_000.0)),
            ]),
        );
        medians.insert(
            EngineKind::Barracuda4k,
            BTreeMap::from([
                (Phase::Commit1, rate(4000.0)),
                (Phase::Commit16, rate(8000.0)),
            ]),
        );
        medians.insert(
            EngineKind::Rocksdb,
            BTreeMap::from([
                (Phase::Commit1, rate(3000.0)),
                (Phase::Commit16, rate(12_000.0)),
            ]),
        );
        let outcome = judge_one(
            &medians,
            EngineKind::Barracuda,
            Phase::Commit16,
            Bound::ScalesAtLeast(Phase::Commit1, 10.0),
        );
        assert_eq!(outcome.value, Some(5.0));
        assert_eq!(outcome.met, Some(false));
        assert_eq!(outcome.detail, "25,000 / 5,000; peers: rocksdb 4.00");

        medians
            .get_mut(&EngineKind::Barracuda)
            .map(|m| m.remove(&Phase::Commit1));
        let outcome = judge_one(
            &medians,
            EngineKind::Barracuda,
            Phase::Commit16,
            Bound::ScalesAtLeast(Phase::Commit1, 10.0),
        );
        assert_eq!(outcome.met, None, "{}", outcome.detail);
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0.0), "0");
        assert_eq!(thousands(999.4), "999");
        assert_eq!(thousands(1_234_567.0), "1,234,567");
        assert_eq!(thousands(-1000.0), "-1,000");
    }
}

//! The workload and model of the in-process crash tests: transactions over three tables
//! (puts, deletes, off-page values) that are a function of a seed and their number, and the
//! tables they should leave, compared whole.
#![allow(
    dead_code,
    reason = "each test binary that includes this module uses part of it"
)]

use std::collections::{BTreeMap, BTreeSet};

use barracuda::{Engine, Table};
use barracuda_testkit::crash::SplitMix64;

use crate::common::chain;

/// The tables every transaction may write.
pub const TABLES: [&str; 3] = ["a", "b", "c"];
/// Keys per table: bounded, so that deletes and overwrites hit existing rows.
pub const KEYS_PER_TABLE: u64 = 400;

/// One row a transaction writes.
#[derive(Clone, Debug)]
pub struct Write {
    /// Index into [`TABLES`].
    pub table: usize,
    /// The key.
    pub key: Vec<u8>,
    /// The value; `None` deletes.
    pub value: Option<Vec<u8>>,
}

/// Transaction `n` of the run with `seed`: 1–12 rows over the three tables, a quarter of them
/// deletes, one value in eight long enough to go off-page (on 4 KiB pages).
pub fn transaction(seed: u64, n: u64) -> Vec<Write> {
    let mut rng = SplitMix64::stream(seed, n);
    let rows = rng.range_inclusive(1, 12);
    (0..rows)
        .map(|row| {
            let table = rng.below(TABLES.len() as u64) as usize;
            let key = format!("k{:05}", rng.below(KEYS_PER_TABLE)).into_bytes();
            let value = (rng.below(4) != 0).then(|| {
                let len = if rng.below(8) == 0 {
                    rng.range_inclusive(1500, 6000)
                } else {
                    rng.range_inclusive(20, 400)
                };
                value(n, row, len as usize, &mut rng)
            });
            Write { table, key, value }
        })
        .collect()
}

/// A value that names the transaction and row that wrote it (`<n>.<row>:`), then random bytes.
pub fn value(n: u64, row: u64, len: usize, rng: &mut SplitMix64) -> Vec<u8> {
    let mut value = format!("{n}.{row}:").into_bytes();
    let origin = value.len().min(len);
    value.resize(len, 0);
    if let Some(rest) = value.get_mut(origin..) {
        rng.fill_bytes(rest);
    }
    value
}

/// What every table should hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Model(pub Vec<BTreeMap<Vec<u8>, Vec<u8>>>);

impl Model {
    /// Empty tables.
    pub fn new() -> Self {
        Self(vec![BTreeMap::new(); TABLES.len()])
    }

    /// Applies an acknowledged transaction.
    pub fn apply(&mut self, writes: &[Write]) {
        for w in writes {
            if let Some(table) = self.0.get_mut(w.table) {
                match &w.value {
                    Some(v) => table.insert(w.key.clone(), v.clone()),
                    None => table.remove(&w.key),
                };
            }
        }
    }

    /// The tables with `writes` applied too.
    pub fn with(&self, writes: &[Write]) -> Self {
        let mut next = self.clone();
        next.apply(writes);
        next
    }
}

/// The first few rows where `got` differs from `want`, for a failure message: each value shown
/// by its length and the transaction that wrote it.
pub fn diff(want: &Model, got: &Model) -> String {
    let show = |v: Option<&Vec<u8>>| {
        v.map_or_else(
            || "absent".to_owned(),
            |v| {
                let tag = v.iter().position(|&c| c == b':').unwrap_or(0);
                let tag = String::from_utf8_lossy(v.get(..tag).unwrap_or_default());
                format!("{} bytes from {tag}", v.len())
            },
        )
    };
    let mut out = Vec::new();
    for (name, (w, g)) in TABLES.iter().zip(want.0.iter().zip(&got.0)) {
        let keys: BTreeSet<&Vec<u8>> = w.keys().chain(g.keys()).collect();
        for key in keys {
            let (a, b) = (w.get(key), g.get(key));
            if a != b {
                out.push(format!(
                    "{name}.{}: want {}, got {}",
                    String::from_utf8_lossy(key),
                    show(a),
                    show(b)
                ));
            }
        }
    }
    let n = out.len();
    out.truncate(6);
    format!("{n} rows differ: {}", out.join("; "))
}

/// Commits `writes` as one transaction.
pub fn commit(db: &Engine, tables: &[Table], writes: &[Write]) -> barracuda::Result<()> {
    let mut tx = db.begin();
    for w in writes {
        match &w.value {
            Some(v) => tx.put(&tables[w.table], &w.key, v)?,
            None => tx.delete(&tables[w.table], &w.key)?,
        }
    }
    tx.commit()
}

/// Commits transactions `from..=to` of `seed`, each applied to `model` once acknowledged.
pub fn commit_all(db: &Engine, tables: &[Table], seed: u64, from: u64, to: u64, model: &mut Model) {
    for n in from..=to {
        let writes = transaction(seed, n);
        commit(db, tables, &writes)
            .unwrap_or_else(|e| panic!("transaction {n} failed: {}", chain(&e)));
        model.apply(&writes);
    }
}

/// Every table's rows, after `check_table` passed on each.
pub fn contents(db: &Engine, what: &str) -> Model {
    Model(
        TABLES
            .iter()
            .map(|name| {
                let table = db
                    .table(name)
                    .unwrap_or_else(|e| panic!("{what}: table {name}: {}", chain(&e)));
                db.check_table(&table)
                    .unwrap_or_else(|e| panic!("{what}: table {name}: {}", chain(&e)));
                db.range(&table, ..)
                    .and_then(Iterator::collect::<Result<BTreeMap<_, _>, _>>)
                    .unwrap_or_else(|e| panic!("{what}: scanning {name}: {}", chain(&e)))
            })
            .collect(),
    )
}

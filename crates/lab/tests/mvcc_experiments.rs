//! `lab snapshot-reads`, `lab history-growth` and `lab concurrent-writers` end to end, through
//! the built binary, at tiny sizes. What would break: an experiment failing to run (their own
//! checks: rows found, the old snapshot's versions, the row count after the update workload,
//! each writer's last rows), or their JSON losing the fields the docs name. No timing is
//! asserted: tests run unoptimised, on busy machines.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn lab(name: &str, out: &Path, db: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_barracuda"))
        .args(["lab", name, "--quick"])
        .args(extra)
        .args([
            "--out",
            out.to_str().unwrap(),
            "--dir",
            db.to_str().unwrap(),
        ])
        .output()
        .expect("run the barracuda binary")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn read_json(path: &Path) -> Value {
    let s = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&s).expect("valid JSON")
}

fn field<'a>(v: &'a Value, path: &str) -> &'a Value {
    let mut cur = v;
    for part in path.split('.') {
        cur = cur
            .get(part)
            .unwrap_or_else(|| panic!("JSON has no field {path} (stopped at {part}): {v:#}"));
    }
    cur
}

fn number(v: &Value, path: &str) -> f64 {
    field(v, path)
        .as_f64()
        .unwrap_or_else(|| panic!("{path} is not a number"))
}

#[test]
fn snapshot_reads_measures_every_case_and_checks_the_old_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let (out_dir, db_dir) = (tmp.path().join("out"), tmp.path().join("db"));
    let out = lab(
        "snapshot-reads",
        &out_dir,
        &db_dir,
        &["--rows", "2000", "--seconds", "0.2"],
    );
    let all = text(&out);
    assert!(out.status.success(), "snapshot-reads failed:\n{all}");
    assert!(all.contains("snapshot / plain: get"), "{all}");
    let doc = read_json(&out_dir.join("snapshot-reads.json"));
    assert_eq!(field(&doc, "experiment"), "snapshot-reads");
    for case in ["get", "scan100", "old_snapshot.get", "old_snapshot.scan100"] {
        for f in ["plain_ns", "snapshot_ns", "ratio"] {
            assert!(
                number(&doc, &format!("results.{case}.{f}")) > 0.0,
                "{case}.{f}"
            );
        }
        let rounds = field(&doc, &format!("results.{case}.rounds_plain_ns"));
        assert_eq!(rounds.as_array().map(Vec::len), Some(3), "{case}");
    }
    // Every 10th of 2,000 rows, all committed after the old snapshot.
    assert_eq!(
        field(&doc, "results.old_snapshot.rows_updated").as_u64(),
        Some(200)
    );
    assert!(number(&doc, "results.verified_rows") > 0.0);
    assert!(field(&doc, "results.target_met").is_boolean());
    assert!(out_dir.join("snapshot-reads.svg").exists());
}

#[test]
fn history_growth_samples_sizes_and_keeps_every_row() {
    let tmp = tempfile::tempdir().unwrap();
    let (out_dir, db_dir) = (tmp.path().join("out"), tmp.path().join("db"));
    let out = lab(
        "history-growth",
        &out_dir,
        &db_dir,
        &["--rows", "500", "--seconds", "2.5", "--threads", "3"],
    );
    let all = text(&out);
    assert!(out.status.success(), "history-growth failed:\n{all}");
    let doc = read_json(&out_dir.join("history-growth.json"));
    assert_eq!(field(&doc, "experiment"), "history-growth");
    // At 0 s, 1 s and 2 s, and when the updaters stopped.
    let samples = field(&doc, "results.samples").as_array().unwrap();
    assert_eq!(samples.len(), 4, "{samples:#?}");
    for s in samples {
        assert!(number(s, "table_file_bytes") > 0.0, "{s}");
        assert!(number(s, "table_size_pages") > 0.0, "{s}");
        assert!(number(s, "undo_file_bytes") > 0.0, "{s}");
    }
    let commits: Vec<f64> = samples.iter().map(|s| number(s, "commits")).collect();
    assert!(commits.windows(2).all(|w| w[0] <= w[1]), "{commits:?}");
    assert!(number(&doc, "results.summary.commits") > 0.0);
    assert!(number(&doc, "results.summary.rows_updated") > 0.0);
    // Every row a thread deleted, it re-inserted.
    assert_eq!(
        field(&doc, "results.summary.deletes").as_u64(),
        field(&doc, "results.summary.reinserts").as_u64()
    );
    assert_eq!(
        field(&doc, "results.after.rows_counted").as_u64(),
        Some(500)
    );
    if field(&doc, "results.after.purge_drained") == true {
        assert_eq!(
            field(&doc, "results.after.tree_delete_marked").as_u64(),
            Some(0)
        );
    }
    assert!(out_dir.join("history-growth.svg").exists());
}

#[test]
fn concurrent_writers_runs_interleaved_rounds_and_reports_medians() {
    let tmp = tempfile::tempdir().unwrap();
    let (out_dir, db_dir) = (tmp.path().join("out"), tmp.path().join("db"));
    let out = lab(
        "concurrent-writers",
        &out_dir,
        &db_dir,
        &["--rows", "2000", "--seconds", "0.6"],
    );
    let all = text(&out);
    assert!(out.status.success(), "concurrent-writers failed:\n{all}");
    assert!(all.contains("medians of 3 interleaved rounds"), "{all}");
    let doc = read_json(&out_dir.join("concurrent-writers.json"));
    for rows in ["rows_per_txn_1", "rows_per_txn_10"] {
        for f in ["commits_per_s_1", "commits_per_s_2", "ratio"] {
            assert!(
                number(&doc, &format!("results.{rows}.{f}")) > 0.0,
                "{rows}.{f}"
            );
        }
        for threads in ["rounds_1", "rounds_2"] {
            let rounds = field(&doc, &format!("results.{rows}.{threads}"));
            assert_eq!(rounds.as_array().map(Vec::len), Some(3), "{rows}.{threads}");
        }
        // The figure is one of the rounds (their median), not a blend.
        let median = number(&doc, &format!("results.{rows}.commits_per_s_2"));
        let rounds = field(&doc, &format!("results.{rows}.rounds_2"));
        assert!(
            rounds
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r.as_f64() == Some(median)),
            "{rows}: {median} among {rounds}"
        );
    }
}

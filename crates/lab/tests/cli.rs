//! The `barracuda` command end to end, through the built binary: every subcommand at tiny size.
//! What would break: a subcommand that stops running, JSON missing the fields the docs and later
//! experiments rely on, `check` passing a corrupted page or failing a clean database.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

use std::path::Path;
use std::process::{Command, Output};

use barracuda::{Engine, EngineOptions, TableOptions};
use serde_json::Value;

fn barracuda(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_barracuda"))
        .args(args)
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

/// What a failed command printed, its exit status and error lines first: a failure message cut
/// short (a CI log keeps only part of it) still shows why the command failed.
fn failure_report(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("error") || line.contains("panicked"))
        .collect();
    format!(
        "{}; its error lines: {errors:#?}\n{}",
        out.status,
        text(out)
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
fn lab_all_quick_writes_tables_json_and_svgs() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("out");
    let db_dir = tmp.path().join("db");
    let out = barracuda(&[
        "lab",
        "all",
        "--quick",
        "--rows",
        "2000",
        "--seconds",
        "0.5",
        "--threads",
        "2",
        "--redo-mib",
        "1",
        "--out",
        out_dir.to_str().unwrap(),
        "--dir",
        db_dir.to_str().unwrap(),
    ]);
    let all = text(&out);
    assert!(
        out.status.success(),
        "lab all failed: {}",
        failure_report(&out)
    );
    for name in [
        "point-select",
        "free-list-stalls",
        "read-ahead",
        "group-commit",
        "compression-footprint",
    ] {
        assert!(
            all.contains(&format!("=== barracuda lab {name} ===")),
            "no table for {name}:\n{all}"
        );
        let doc = read_json(&out_dir.join(format!("{name}.json")));
        assert_eq!(field(&doc, "experiment"), name);
        assert!(number(&doc, "machine.cores") >= 1.0);
        assert!(field(&doc, "machine.kernel").is_string());
        assert!(number(&doc, "machine.mem_total_kib") >= 0.0);
        assert_eq!(field(&doc, "settings.rows").as_u64(), Some(2000));
        assert_eq!(field(&doc, "settings.threads").as_u64(), Some(2));
        assert!(number(&doc, "settings.experiment.table_bytes") > 0.0);
        assert!(number(&doc, "settings.experiment.buffer_pool_bytes") > 0.0);
        let svg = std::fs::read_to_string(out_dir.join(format!("{name}.svg"))).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "{name}.svg is not an SVG"
        );
    }

    let ps = read_json(&out_dir.join("point-select.json"));
    assert!(number(&ps, "results.uncompressed.qps") > 0.0);
    assert!(number(&ps, "results.uncompressed.queries") > 0.0);
    for p in ["p50_ns", "p99_ns", "p999_ns", "max_ns"] {
        assert!(
            number(&ps, &format!("results.uncompressed.latency.{p}")) > 0.0,
            "{p}"
        );
    }
    assert!(field(&ps, "results.uncompressed.timeline")
        .as_array()
        .is_some_and(|t| !t.is_empty()));
    let variants = field(&ps, "results.variants").as_array().unwrap();
    assert_eq!(variants.len(), 4);
    // ROW_FORMAT=COMPRESSED (KEY_BLOCK_SIZE 8 and 4) and page compression: all measured.
    let status = |v: &Value| v.get("status").and_then(Value::as_str).map(str::to_owned);
    assert!(variants
        .iter()
        .all(|v| status(v).as_deref() == Some("measured")));
    // The seed's rows: plain and KEY_BLOCK_SIZE=4 with every frame, and with every block but
    // a quarter of the frames (those decompress).
    for key in [
        "seed_plain-all-frames",
        "seed_zip4-all-frames",
        "seed_zip4-blocks-only",
        "seed_zip4_lz4-blocks-only",
    ] {
        assert!(
            number(&ps, &format!("results.seed.{key}.qps")) > 0.0,
            "{key}"
        );
    }
    assert!(
        number(
            &ps,
            "results.seed.seed_zip4-blocks-only.uncompress_ops_per_query"
        ) > 0.0
    );
    for v in variants {
        assert!(
            v.get("qps")
                .and_then(Value::as_f64)
                .is_some_and(|q| q > 0.0),
            "{v}"
        );
        assert!(
            v.get("uncompress_ops_per_query")
                .and_then(Value::as_f64)
                .is_some(),
            "{v}"
        );
    }

    let cf = read_json(&out_dir.join("compression-footprint.json"));
    for variant in [
        "16k-none",
        "16k-zlib",
        "16k-lz4",
        "64k-none",
        "64k-zlib",
        "64k-lz4",
        "16k-kbs16-zlib",
        "16k-kbs8-zlib",
        "16k-kbs4-zlib",
        "16k-kbs8-lz4",
        "64k-kbs16-zlib",
        "64k-kbs8-zlib",
    ] {
        let at = |f: &str| format!("results.{variant}.{f}");
        for f in [
            "page_size",
            "logical_bytes",
            "file_bytes",
            "allocated_bytes",
            "ratio",
            "raw_ratio",
            "load_s",
        ] {
            assert!(number(&cf, &at(f)) > 0.0, "{variant} {f}");
        }
        assert!(field(&cf, &at("compression")).is_string());
    }
    // Dictionary text compresses: zlib saves at least a third of the blocks at 16 KiB, and
    // 4 KiB blocks hold the rows in at most half the plain table's bytes.
    assert!(number(&cf, "results.16k-zlib.ratio") > 1.5);
    assert!(number(&cf, "results.16k-kbs4-zlib.raw_ratio") > 1.5);
    assert!(number(&cf, "results.16k-kbs4-zlib.compress_ops_ok") > 0.0);
    // 1 thread and one per core (at least 2).
    let flushes = field(&cf, "results.flush_threads").as_object().unwrap();
    assert!(
        flushes.len() >= 2 && flushes.contains_key("1"),
        "{flushes:?}"
    );
    for (threads, f) in flushes {
        assert!(
            f.get("pages_per_s").and_then(Value::as_f64).unwrap_or(0.0) > 0.0,
            "{threads} threads"
        );
    }

    let fl = read_json(&out_dir.join("free-list-stalls.json"));
    for policy in ["legacy", "backoff", "eager"] {
        // The KEY_BLOCK_SIZE=4 copy: every query found its rows, decompressing as it went.
        let at = |f: &str| format!("results.compressed-{policy}.{f}");
        assert!(number(&fl, &at("qps")) > 0.0, "compressed {policy} qps");
        assert!(number(&fl, &at("uncompress_ops_per_query")) >= 0.0);
        assert!(number(&fl, &at("latency.max_ns")) > 0.0);
    }
    for policy in ["legacy", "backoff", "eager"] {
        let at = |f: &str| format!("results.{policy}.{f}");
        assert!(number(&fl, &at("qps")) > 0.0, "{policy} qps");
        for f in ["latency.p99_ns", "latency.p999_ns", "latency.max_ns"] {
            assert!(number(&fl, &at(f)) > 0.0, "{policy} {f}");
        }
        for f in [
            "buffer_pool_wait_free",
            "free_wait.count",
            "free_wait.p999_us",
            "free_wait.max_us",
            "pages_read",
        ] {
            assert!(number(&fl, &at(f)) >= 0.0, "{policy} {f}");
        }
        assert!(
            field(&fl, &at("timeline"))
                .as_array()
                .is_some_and(|t| !t.is_empty()),
            "{policy} timeline"
        );
        assert!(field(&fl, &at("timeline")).as_array().unwrap()[0]
            .get("max_ns")
            .is_some());
    }
    assert!(
        number(&fl, "settings.experiment.table_bytes")
            > number(&fl, "settings.experiment.buffer_pool_bytes"),
        "the table must be larger than the pool"
    );

    let ra = read_json(&out_dir.join("read-ahead.json"));
    let scans = field(&ra, "results.scans").as_array().unwrap();
    assert_eq!(scans.len(), 4, "two cold scans per setting with --quick");
    for s in scans {
        assert_eq!(s.get("rows").and_then(Value::as_u64), Some(2000));
        for f in [
            "seconds",
            "rows_per_s",
            "pages_read",
            "read_ahead_linear",
            "read_ahead_evicted",
        ] {
            assert!(s.get(f).and_then(Value::as_f64).is_some(), "scan field {f}");
        }
    }
    assert!(number(&ra, "results.median_scan_s.on") > 0.0);
    assert!(number(&ra, "results.median_scan_s.off") > 0.0);

    let gc = read_json(&out_dir.join("group-commit.json"));
    for threads in ["1", "4", "16"] {
        for f in [
            "commits_per_s",
            "p50_us",
            "p99_us",
            "fsyncs",
            "commits_per_fsync",
        ] {
            assert!(
                number(&gc, &format!("results.{threads}.{f}")) > 0.0,
                "group-commit {threads} threads: {f}"
            );
        }
    }
    // How many commits one fsync serves depends on how long this machine's fsync takes (on a
    // fast device 16 committers can each find the log already synced), so the figure is only
    // reported here; `redo/tests/log_files.rs` proves grouping with syncs of a known length.
    assert!(number(&gc, "settings.experiment.disk_baseline.fdatasync_per_s") > 0.0);

    assert!(all.contains("=== barracuda lab recovery ==="), "{all}");
    let rec = read_json(&out_dir.join("recovery.json"));
    // The writer was killed once 1 MiB of redo lay past its checkpoint, which had not moved:
    // recovery starts there and replays at least about that much (a unit still being written
    // at the kill is discarded, hence the margin).
    assert_eq!(
        field(&rec, "results.checkpoint_lsn"),
        field(&rec, "results.writer.checkpoint_lsn_at_ready")
    );
    let redo = number(&rec, "results.redo_bytes");
    assert!(redo >= 0.9 * f64::from(1u32 << 20), "replayed {redo} bytes");
    for f in ["recovery_s", "mb_per_s", "mtrs", "pages_written", "batches"] {
        assert!(number(&rec, &format!("results.{f}")) > 0.0, "recovery {f}");
    }

    assert!(all.contains("=== barracuda lab doublewrite ==="), "{all}");
    let dw = read_json(&out_dir.join("doublewrite.json"));
    for setting in [
        "off",
        "on",
        "detect-only",
        "off-simulated",
        "atomic-writes-simulated",
    ] {
        for f in ["pages_flushed", "bytes_written", "pages_per_s"] {
            assert!(
                number(&dw, &format!("results.{setting}.{f}")) > 0.0,
                "doublewrite {setting}: {f}"
            );
        }
    }
    // Bytes per page flushed follow from the file format, whatever the machine: each page once
    // in place, plus once more in the doublewrite file (On) or not (Off, untorn writes), plus a
    // descriptor page per batch (On, DetectOnly).
    let ratio = |setting: &str| number(&dw, &format!("results.{setting}.bytes_per_page_ratio"));
    assert!(
        (1.0..1.2).contains(&ratio("detect-only")),
        "{}",
        ratio("detect-only")
    );
    assert!((2.0..2.2).contains(&ratio("on")), "{}", ratio("on"));
    for setting in ["off", "off-simulated", "atomic-writes-simulated"] {
        assert!(
            (ratio(setting) - 1.0).abs() < 1e-9,
            "{setting}: {}",
            ratio(setting)
        );
    }
    assert_eq!(
        field(&dw, "results.atomic-writes-simulated.mode_in_effect"),
        "atomic-writes"
    );

    assert!(
        all.contains("=== barracuda lab deadlock-detect ==="),
        "{all}"
    );
    let dd = read_json(&out_dir.join("deadlock-detect.json"));
    for setting in ["on", "off"] {
        for threads in ["1", "10", "100", "300"] {
            let at = format!("results.{setting}.{threads}");
            assert!(number(&dd, &format!("{at}.tps")) > 0.0, "{at}");
            assert!(number(&dd, &format!("{at}.p99_ms")) > 0.0, "{at}");
            // One row cannot deadlock; with detection off nothing searches.
            assert_eq!(
                field(&dd, &format!("{at}.deadlocks")).as_u64(),
                Some(0),
                "{at}"
            );
            if setting == "off" {
                let searches = field(&dd, &format!("{at}.deadlock_searches")).as_u64();
                assert_eq!(searches, Some(0), "{at}");
            }
        }
    }
    // A wait behind a running owner is one search step, however many threads queue.
    let (searches, steps) = (
        number(&dd, "results.on.300.deadlock_searches"),
        number(&dd, "results.on.300.deadlock_search_steps"),
    );
    assert!(
        searches > 0.0 && (steps - searches).abs() < 1e-9,
        "{searches} {steps}"
    );
}

/// A closed database with one table of small and off-page (overflow) values.
fn make_database(dir: &Path) {
    let db = Engine::open(dir, EngineOptions::default().buffer_pool_bytes(4 << 20)).unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    let mut tx = db.begin();
    for i in 0u32..3000 {
        let value = if i % 500 == 0 {
            vec![b'x'; 40_000]
        } else {
            format!("value-{i}").into_bytes()
        };
        tx.put(&t, format!("key-{i:06}").as_bytes(), &value)
            .unwrap();
    }
    tx.commit().unwrap();
    db.close().unwrap();
}

#[test]
fn check_passes_a_clean_database_and_names_a_corrupted_page() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    make_database(&dir);
    let out = barracuda(&["check", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "check failed on a clean database:\n{}",
        text(&out)
    );
    assert!(text(&out).contains("OK: no problem found"));
    // The 40 000-byte values span three overflow pages each, every one linked back to the
    // previous (FORMATS.md §6): nothing to warn about.
    assert!(
        !text(&out).contains("warning"),
        "check warned on a clean database:\n{}",
        text(&out)
    );

    // Flip one byte in the middle of page 2 of the closed table's file.
    let file = dir.join("tables").join("t.ibd");
    let mut bytes = std::fs::read(&file).unwrap();
    let page_size = 16 * 1024;
    assert!(bytes.len() > 3 * page_size);
    bytes[2 * page_size + 5000] ^= 0x5a;
    std::fs::write(&file, bytes).unwrap();

    let out = barracuda(&["check", dir.to_str().unwrap()]);
    let all = text(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "check must fail on a corrupted page:\n{all}"
    );
    assert!(
        all.contains("t.ibd: page 2:"),
        "the bad page is not named:\n{all}"
    );
    assert!(
        all.contains("checksum mismatch"),
        "the reason is not given:\n{all}"
    );
}

#[test]
fn check_refuses_a_directory_without_a_database() {
    let tmp = tempfile::tempdir().unwrap();
    let out = barracuda(&["check", tmp.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn inspect_summarises_tables_and_decodes_pages() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    make_database(&dir);
    let d = dir.to_str().unwrap();

    let out = barracuda(&["inspect", d]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("table t ("), "{all}");
    assert!(all.contains("index leaf"), "{all}");
    assert!(all.contains("3000 records"), "{all}");
    assert!(all.contains("height 2"), "{all}");
    assert!(
        !all.contains("overflow 0,"),
        "off-page values must show overflow pages:\n{all}"
    );

    let out = barracuda(&["inspect", d, "t", "--page", "1"]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("verification: ok"), "{all}");
    assert!(all.contains("index page: internal level 1"), "{all}");
    assert!(all.contains("-> child page"), "{all}");

    let out = barracuda(&["inspect", d, "system.ibs", "--page", "1"]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(
        all.contains("catalog page") || all.contains("all zero"),
        "{all}"
    );

    let out = barracuda(&["inspect", d, "missing"]);
    assert!(!out.status.success());
}

#[test]
fn inspect_shows_leaf_records_with_escaped_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = Engine::open(&dir, EngineOptions::default().buffer_pool_bytes(4 << 20)).unwrap();
    let t = db.create_table("small", TableOptions::default()).unwrap();
    db.put(&t, b"a\x00b", b"12345").unwrap();
    db.close().unwrap();
    let out = barracuda(&["inspect", dir.to_str().unwrap(), "small", "--page", "1"]);
    let all = text(&out);
    assert!(
        all.contains(r#"key 610062 "a\x00b" -> inline value, 5 bytes"#),
        "{all}"
    );
}

#[test]
fn status_prints_the_engine_status() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    make_database(&dir);
    let out = barracuda(&["status", dir.to_str().unwrap()]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("BARRACUDA ENGINE STATUS"), "{all}");
    assert!(all.contains("BUFFER POOL AND MEMORY"), "{all}");

    let out = barracuda(&["status", tmp.path().join("none").to_str().unwrap()]);
    assert!(!out.status.success(), "status must not create a database");
    assert!(!tmp.path().join("none").join("system.ibs").exists());
}

#[test]
fn help_lists_every_experiment_and_unknown_ones_are_refused() {
    let out = barracuda(&["lab", "--help"]);
    let all = text(&out);
    for name in [
        "point-select",
        "free-list-stalls",
        "read-ahead",
        "group-commit",
        "recovery",
        "all",
    ] {
        assert!(all.contains(name), "{name} missing from lab --help:\n{all}");
    }
    let out = barracuda(&["--help"]);
    let all = text(&out);
    for sub in ["lab", "check", "inspect", "status"] {
        assert!(all.contains(sub), "{sub} missing from --help");
    }
    let out = barracuda(&["lab", "no-such-experiment"]);
    assert!(!out.status.success());
}

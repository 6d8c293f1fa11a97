#!/usr/bin/env bash
# The deadlock-detect experiment run against MariaDB's InnoDB, beside `barracuda lab
# deadlock-detect`: N client threads each running the 2009 seed's
#   UPDATE t1 SET b = b + 1 WHERE a = 1
# as autocommit transactions, with innodb_deadlock_detect ON and OFF (switched at run time),
# innodb_flush_log_at_trx_commit = 0 (no sync per commit, like Durability::Background).
#
# Needs Debian's mariadb-server, mariadb-client and bc (`apt-get install mariadb-server bc
# mariadb-client`). Starts a private server on a socket in a temporary directory, as the
# current user, and removes it afterwards. Prints one line per phase:
#   threads detect queries seconds tps
# Usage: benches/peers/mariadb-deadlock-detect.sh [seconds-per-phase (default 5)]
set -euo pipefail

SECONDS_PER_PHASE=${1:-5}
WORK=$(mktemp -d /tmp/mariadb-dd.XXXXXX)
SOCK="$WORK/mysqld.sock"
cleanup() {
    if [[ -f "$WORK/mysqld.pid" ]]; then
        kill "$(cat "$WORK/mysqld.pid")" 2>/dev/null || true
        for _ in $(seq 50); do [[ -f "$WORK/mysqld.pid" ]] || break; sleep 0.1; done
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

mariadb-install-db --no-defaults --auth-root-authentication-method=normal --user="$(id -un)" \
    --datadir="$WORK/data" >"$WORK/install.log" 2>&1
mariadbd --no-defaults --user="$(id -un)" --datadir="$WORK/data" --socket="$SOCK" \
    --pid-file="$WORK/mysqld.pid" --skip-networking --max-connections=1000 \
    --innodb-buffer-pool-size=256M --innodb-flush-log-at-trx-commit=0 \
    --innodb-lock-wait-timeout=50 >"$WORK/server.log" 2>&1 &
for _ in $(seq 100); do
    mariadb --no-defaults -S "$SOCK" -uroot -e 'SELECT 1' >/dev/null 2>&1 && break
    sleep 0.2
done
sql() { mariadb --no-defaults -S "$SOCK" -uroot -N -e "$1"; }
sql "SELECT VERSION()" | sed 's/^/# MariaDB /'
sql "CREATE DATABASE dd; CREATE TABLE dd.t1 (a INT PRIMARY KEY, b BIGINT NOT NULL) ENGINE=InnoDB;
     INSERT INTO dd.t1 VALUES (1, 0);"

# mysqlslap runs a number of queries, not a time: calibrate on a short run per phase so that
# each phase takes about SECONDS_PER_PHASE.
run_phase() { # threads queries -> elapsed seconds
    local threads=$1 queries=$2 start end
    start=$(date +%s.%N)
    mariadb-slap --no-defaults -S "$SOCK" -uroot --create-schema=dd --concurrency="$threads" \
        --iterations=1 --number-of-queries="$queries" \
        --query="UPDATE t1 SET b = b + 1 WHERE a = 1" >/dev/null
    end=$(date +%s.%N)
    echo "$end - $start" | bc -l
}

echo "threads detect queries seconds tps"
for threads in 1 10 100 300; do
    for detect in ON OFF; do
        sql "SET GLOBAL innodb_deadlock_detect = $detect"
        probe=$((threads * 200))
        t=$(run_phase "$threads" "$probe")
        queries=$(echo "q = $probe * $SECONDS_PER_PHASE / $t; if (q < $threads) q = $threads; scale=0; q / 1" | bc -l)
        t=$(run_phase "$threads" "$queries")
        printf '%s %s %s %.3f %.0f\n' "$threads" "$detect" "$queries" "$t" "$(echo "$queries / $t" | bc -l)"
    done
done
sql "SELECT 'final counter', b FROM dd.t1" | sed 's/^/# /'

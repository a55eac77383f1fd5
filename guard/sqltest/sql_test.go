package sqltest_test

import (
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/guard"
	"github.com/redlock-go/redlock/internal/guardtest"
)

func testSQLErrors(t *testing.T, db *sql.DB) {
	ctx := t.Context()
	for _, q := range []string{
		`CREATE TABLE big (id bigint PRIMARY KEY, val text NOT NULL DEFAULT '',
			fence numeric(20) NOT NULL DEFAULT 0, fence_owner text NOT NULL DEFAULT '')`,
		`CREATE TABLE nullable (id bigint PRIMARY KEY, val text, fence bigint, fence_owner text)`,
		`CREATE TABLE dup (id bigint, val text, fence bigint NOT NULL DEFAULT 0, fence_owner text NOT NULL DEFAULT '')`,
		`CREATE TABLE custom (key text PRIMARY KEY, val text, ver bigint NOT NULL DEFAULT 0, who text NOT NULL DEFAULT '')`,
		`INSERT INTO big (id) VALUES (1)`,
		`INSERT INTO nullable (id) VALUES (1)`,
		`INSERT INTO nullable (id, fence) VALUES (2, 5)`,
		`INSERT INTO dup (id) VALUES (1), (1)`,
		`INSERT INTO custom (key) VALUES ('k')`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	t.Run("CustomColumnsAndSchema", func(t *testing.T) {
		g := guard.SQL{Table: "public.custom", IDColumn: "key", FenceColumn: "ver", OwnerColumn: "who"}
		if err := g.Update(ctx, db, "k", guardtest.HolderAt(3), "val = $1", "v3"); err != nil {
			t.Fatalf("Update(fence 3) = %v; want nil", err)
		}
		guardtest.AssertStale(t, "Update(fence 2)", g.Update(ctx, db, "k", guardtest.HolderAt(2), "val = $1", "v2"), "public.custom row key = k", 2, 3)
		guardtest.AssertTie(t, "Update(fence 3, another holder)",
			g.Update(ctx, db, "k", guard.HolderOf(3, "another"), "val = $1", "other"), "public.custom row key = k", 3)
		var v, who string
		var f uint64
		db.QueryRowContext(ctx, "SELECT val, ver, who FROM custom WHERE key = 'k'").Scan(&v, &f, &who)
		if want := guard.OwnerID(guardtest.HolderAt(3).Token()); v != "v3" || f != 3 || who != want {
			t.Errorf("row = %q, fence %d, owner %q; want %q, 3, %q", v, f, who, "v3", want)
		}
	})

	t.Run("NoSuchRow", func(t *testing.T) {
		err := guard.SQL{Table: "guarded"}.Update(ctx, db, "no-such-id", guardtest.HolderAt(1), "val = $1", "v")
		if !errors.Is(err, sql.ErrNoRows) || errors.Is(err, guard.ErrStaleFence) || !strings.Contains(err.Error(), "no such row") {
			t.Errorf("Update(missing row) = %v; want a \"no such row\" error matching sql.ErrNoRows, not guard.ErrStaleFence", err)
		}
	})

	t.Run("NullFence", func(t *testing.T) {
		err := guard.SQL{Table: "nullable"}.Update(ctx, db, 1, guardtest.HolderAt(1), "val = $1", "v")
		if err == nil || errors.Is(err, guard.ErrStaleFence) || !strings.Contains(err.Error(), "fence is NULL: make the column NOT NULL") {
			t.Errorf("Update(NULL fence) = %v; want an error saying to make the column NOT NULL", err)
		}
		err = guard.SQL{Table: "nullable"}.Update(ctx, db, 2, guardtest.HolderAt(5), "val = $1", "v")
		if err == nil || errors.Is(err, guard.ErrStaleFence) || !strings.Contains(err.Error(), "fence_owner is NULL: make the column NOT NULL") {
			t.Errorf("Update(NULL owner) = %v; want an error saying to make the column NOT NULL", err)
		}
	})

	t.Run("IDNotUnique", func(t *testing.T) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		err = guard.SQL{Table: "dup"}.Update(ctx, tx, 1, guardtest.HolderAt(1), "val = $1", "v")
		if err == nil || !strings.Contains(err.Error(), "must be unique") {
			t.Errorf("Update(duplicate id) = %v; want an error saying id must be unique", err)
		}
	})

	t.Run("BadSet", func(t *testing.T) {
		err := guard.SQL{Table: "guarded"}.Update(ctx, db, "x", guardtest.HolderAt(1), "no_such_column = $1", "v")
		if err == nil || errors.Is(err, guard.ErrStaleFence) || !strings.Contains(err.Error(), "no_such_column") {
			t.Errorf("Update(bad set) = %v; want the database's error", err)
		}
	})

	t.Run("Rollback", func(t *testing.T) {
		// The fenced update belongs to the caller's transaction.
		g := guard.SQL{Table: "big"}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Update(ctx, tx, 1, guardtest.HolderAt(50), "val = $1", "rolled back"); err != nil {
			t.Fatalf("Update in tx = %v", err)
		}
		tx.Rollback()
		if err := g.Update(ctx, db, 1, guardtest.HolderAt(10), "val = $1", "after"); err != nil {
			t.Errorf("Update(fence 10) after the fence-50 update was rolled back = %v; want nil", err)
		}
	})

	t.Run("BigFences", func(t *testing.T) {
		// numeric(20) holds every uint64; the database compares exactly.
		g := guard.SQL{Table: "big"}
		guardtest.BigFences(t, "big row id = 1",
			func(h guard.Holder, v string) error { return g.Update(ctx, db, 1, h, "val = $1", v) },
			func() (v string, f uint64, err error) {
				var fs string
				if err := db.QueryRowContext(ctx, "SELECT val, fence FROM big WHERE id = 1").Scan(&v, &fs); err != nil {
					return "", 0, err
				}
				f, err = strconv.ParseUint(fs, 10, 64)
				return v, f, err
			})
	})
}

package guard_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/guard"
	"github.com/redlock-go/redlock/internal/guardtest"
)

// guard.SQL's logic that needs no database. Its behaviour on PostgreSQL is
// tested in guard/sqltest, a module of its own (so that the root module
// does not require a PostgreSQL driver).

// recordingExecer records the statements sent to it and reports one row
// changed; it has no rows to query.
type recordingExecer struct {
	queries []string
	args    [][]any
}

func (e *recordingExecer) ExecContext(_ context.Context, query string, args ...any) (sql.Result, error) {
	e.queries = append(e.queries, query)
	e.args = append(e.args, args)
	return driverResult(1), nil
}

func (e *recordingExecer) QueryRowContext(context.Context, string, ...any) *sql.Row {
	panic("recordingExecer: no rows to query")
}

type driverResult int64

func (r driverResult) LastInsertId() (int64, error) { return 0, errors.New("no insert id") }
func (r driverResult) RowsAffected() (int64, error) { return int64(r), nil }

func TestSQLBadIdentifiers(t *testing.T) {
	cases := []struct {
		guard guard.SQL
		want  string
	}{
		{guard.SQL{}, "guard.SQL.Table is empty"},
		{guard.SQL{Table: "guarded; DROP TABLE guarded"}, `guard.SQL.Table "guarded; DROP TABLE guarded" is not a plain SQL identifier`},
		{guard.SQL{Table: "1guarded"}, "is not a plain SQL identifier"},
		{guard.SQL{Table: "a.b.c"}, "is not a plain SQL identifier"},
		{guard.SQL{Table: `"guarded"`}, "is not a plain SQL identifier"},
		{guard.SQL{Table: "guarded", IDColumn: "id)"}, `guard.SQL.IDColumn "id)" is not a plain SQL identifier`},
		{guard.SQL{Table: "guarded", FenceColumn: "fence--"}, `guard.SQL.FenceColumn "fence--" is not a plain SQL identifier`},
		{guard.SQL{Table: "guarded", OwnerColumn: "owner col"}, `guard.SQL.OwnerColumn "owner col" is not a plain SQL identifier`},
		{guard.SQL{Table: "guarded", IDColumn: "fence"}, "IDColumn and FenceColumn are both"},
		{guard.SQL{Table: "guarded", OwnerColumn: "fence"}, "FenceColumn and OwnerColumn are both"},
		{guard.SQL{Table: "guarded", OwnerColumn: "id"}, "IDColumn and OwnerColumn are both"},
	}
	for _, c := range cases {
		db := &recordingExecer{}
		err := c.guard.Update(t.Context(), db, "x", guardtest.HolderAt(1), "val = $1", "v")
		if err == nil || !strings.HasPrefix(err.Error(), "redlock: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v.Update = %v; want a redlock: error containing %q", c.guard, err, c.want)
		}
		if len(db.queries) > 0 {
			t.Errorf("%+v.Update sent %q; want nothing sent", c.guard, db.queries)
		}
	}
}

// TestSQLStatement: the fenced UPDATE puts the guard's placeholders after
// the caller's, sends the owner id (never the token), and with fence 0
// sends nothing.
func TestSQLStatement(t *testing.T) {
	h := guard.HolderOf(7, "secret-token")
	tests := []struct {
		name  string
		g     guard.SQL
		set   string
		args  []any
		query string
	}{
		{"defaults", guard.SQL{Table: "guarded"}, "val = $1, note = $2", []any{"v", "n"},
			"UPDATE guarded SET val = $1, note = $2, fence = $3, fence_owner = $5 WHERE id = $4 AND (fence < $3 OR (fence = $3 AND fence_owner = $5))"},
		{"fenced read", guard.SQL{Table: "s.t", IDColumn: "k", FenceColumn: "f", OwnerColumn: "o"}, " ", nil,
			"UPDATE s.t SET f = $1, o = $3 WHERE k = $2 AND (f < $1 OR (f = $1 AND o = $3))"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := &recordingExecer{}
			if err := tt.g.Update(t.Context(), db, 42, h, tt.set, tt.args...); err != nil {
				t.Fatalf("Update = %v; want nil (one row changed)", err)
			}
			if len(db.queries) != 1 || db.queries[0] != tt.query {
				t.Fatalf("Update sent %q; want %q", db.queries, tt.query)
			}
			want := append(slices.Clone(tt.args), uint64(7), 42, guard.OwnerID("secret-token"))
			if !slices.Equal(db.args[0], want) {
				t.Errorf("Update args = %v; want %v", db.args[0], want)
			}
		})
	}
	db := &recordingExecer{}
	err := guard.SQL{Table: "guarded"}.Update(t.Context(), db, 1, guard.HolderOf(0, "t"), "val = $1", "v")
	if !errors.Is(err, guard.ErrNoFence) || len(db.queries) > 0 {
		t.Errorf("Update(fence 0) = %v, sent %q; want guard.ErrNoFence and nothing sent", err, db.queries)
	}
}

package sqltest_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/guard"
	"github.com/redlock-go/redlock/internal/guardtest"
)

// TestSQLStore runs the scenarios of every guarded store
// (internal/guardtest) on guard.SQL over a PostgreSQL server the test
// starts, then the SQL guard's own error cases.
func TestSQLStore(t *testing.T) {
	db := startPostgres(t)
	if _, err := db.ExecContext(t.Context(), sqlStoreTable); err != nil {
		t.Fatalf("CREATE TABLE: %v", err)
	}
	lockNodes := func(t testing.TB) []redis.UniversalClient { return shared.Cluster(t).Clients() }
	guardtest.RunScenarios(t, newSQLStore(db), "postgres", lockNodes)
	t.Run("Errors", func(t *testing.T) { testSQLErrors(t, db) })
}

var _ guardtest.Store = (*sqlStore)(nil)

// sqlStore is rows of a PostgreSQL table (sqlStoreTable) behind a
// guard.SQL; every access is a transaction of its own.
type sqlStore struct {
	db    *sql.DB
	guard guard.SQL
}

// sqlStoreTable creates the table of a sqlStore.
const sqlStoreTable = `CREATE TABLE guarded (
	id          text PRIMARY KEY,
	val         text NOT NULL DEFAULT '',
	fence       bigint NOT NULL DEFAULT 0,
	fence_owner text NOT NULL DEFAULT ''
)`

// newSQLStore returns a store in db's table "guarded" (sqlStoreTable).
func newSQLStore(db *sql.DB) *sqlStore {
	return &sqlStore{db: db, guard: guard.SQL{Table: "guarded"}}
}

func (s *sqlStore) Create(tb testing.TB, resource string) {
	tb.Helper()
	_, err := s.db.ExecContext(tb.Context(),
		`INSERT INTO guarded (id) VALUES ($1) ON CONFLICT (id) DO UPDATE SET val = '', fence = 0, fence_owner = ''`, resource)
	if err != nil {
		tb.Fatalf("INSERT: %v", err)
	}
}

// inTx runs f in a transaction, committed if f succeeds.
func (s *sqlStore) inTx(ctx context.Context, f func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (s *sqlStore) Write(ctx context.Context, resource string, h guard.Holder, value string) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		return s.guard.Update(ctx, tx, resource, h, "val = $1", value)
	})
}

func (s *sqlStore) Read(ctx context.Context, resource string, h guard.Holder) (v string, err error) {
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.guard.Update(ctx, tx, resource, h, ""); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, "SELECT val FROM guarded WHERE id = $1", resource).Scan(&v)
	})
	return v, err
}

func (s *sqlStore) Stored(ctx context.Context, resource string) (v string, f uint64, err error) {
	err = s.db.QueryRowContext(ctx, "SELECT val, fence FROM guarded WHERE id = $1", resource).Scan(&v, &f)
	return v, f, err
}

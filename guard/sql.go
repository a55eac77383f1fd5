package guard

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Execer is what [SQL.Update] needs from a database handle: *sql.Tx,
// *sql.DB and *sql.Conn fit. Pass the transaction the rest of the caller's
// work runs in, so that the fenced update commits or rolls back with it.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

var (
	_ Execer = (*sql.Tx)(nil)
	_ Execer = (*sql.DB)(nil)
	_ Execer = (*sql.Conn)(nil)
)

// SQL fences updates to rows of a SQL table: each row keeps the
// highest fence accepted for it in FenceColumn and the [OwnerID] of the
// holder it came from in OwnerColumn, and Update changes a row only if the
// holder's fence is above that one, or equal to it from the same holder (the
// rule [Accepts]), recording both, in one statement:
//
//	UPDATE <Table> SET <set>, <FenceColumn> = $f, <OwnerColumn> = $o
//	WHERE <IDColumn> = $id
//	  AND (<FenceColumn> < $f OR (<FenceColumn> = $f AND <OwnerColumn> = $o))
//
// The statement uses PostgreSQL's $n placeholders (pgx, lib/pq). The table
// needs two columns for the guard:
//
//	fence       bigint NOT NULL DEFAULT 0,
//	fence_owner text   NOT NULL DEFAULT ''
//
// The fence may also be numeric(20), for the whole uint64 range (bigint
// holds fences up to 2^63-1, more than any lock reaches), with a driver that
// sends uint64 values as they are (pgx does). The owner column holds the
// owner id, 32 hex digits, never the lock's token: the token is the secret
// proof of ownership (whoever knows it can extend or release the lock), and
// the database need not learn it. Rows must exist before they are fenced:
// insert them with fence 0 and an empty owner.
//
// Under PostgreSQL's default isolation (READ COMMITTED), concurrent updates
// of a row wait for each other and each re-checks the fence against the row
// as the other left it, so the stored fence never goes down. Under
// REPEATABLE READ or SERIALIZABLE the later one fails with a serialization
// error instead; retry it in a new transaction.
//
// To fence a read (the package doc says why a read-modify-write needs it),
// call Update with an empty set before reading the row in the same
// transaction: it records the fence and holds the row lock until the
// transaction ends.
//
// Table is required; IDColumn defaults to "id", FenceColumn to "fence" and
// OwnerColumn to "fence_owner". All must be plain SQL identifiers (letters, digits and underscores,
// not starting with a digit; Table may be schema-qualified, "schema.table"):
// they are put into the statement as they are. The zero value is not
// usable; a SQL guard is a value, safe for concurrent use.
type SQL struct {
	Table, IDColumn, FenceColumn, OwnerColumn string
}

var sqlIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// sqlNames are the identifiers of a SQL guard, validated, defaults filled in.
type sqlNames struct {
	table, id, fence, owner string
}

// names validates the identifiers and fills in the defaults.
func (g SQL) names() (sqlNames, error) {
	n := sqlNames{g.Table, cmp.Or(g.IDColumn, "id"), cmp.Or(g.FenceColumn, "fence"), cmp.Or(g.OwnerColumn, "fence_owner")}
	table := n.table
	if table == "" {
		return sqlNames{}, errors.New("redlock: guard.SQL.Table is empty: set it to the table that holds the fenced rows")
	}
	schema, name, qualified := strings.Cut(table, ".")
	if !sqlIdent.MatchString(schema) || (qualified && !sqlIdent.MatchString(name)) {
		return sqlNames{}, fmt.Errorf("redlock: guard.SQL.Table %q is not a plain SQL identifier (letters, digits and _, not starting with a digit; or schema.table): rename the table or use a view", table)
	}
	cols := []struct{ field, name string }{{"IDColumn", n.id}, {"FenceColumn", n.fence}, {"OwnerColumn", n.owner}}
	for i, c := range cols {
		if !sqlIdent.MatchString(c.name) {
			return sqlNames{}, fmt.Errorf("redlock: guard.SQL.%s %q is not a plain SQL identifier (letters, digits and _, not starting with a digit): rename the column", c.field, c.name)
		}
		for _, d := range cols[:i] {
			if d.name == c.name {
				return sqlNames{}, fmt.Errorf("redlock: guard.SQL.%s and %s are both %q: the id, the fence and its owner need a column each", d.field, c.field, c.name)
			}
		}
	}
	return n, nil
}

// Update runs the fenced UPDATE of the row whose IDColumn is id for holder
// h, in tx (the caller's transaction; commit or roll back as usual
// afterwards). set is the SET list without the fence, such as
// "balance = balance + $1, note = $2", with args for $1..$k; the guard
// appends its own placeholders after them ($k+1 for the fence, $k+2 for id,
// $k+3 for the owner id). set is SQL text: build it in the program, never
// from input. An empty set only records the fence (a fenced read, see
// [SQL]).
//
// If the row's fence is higher than h's, or equal to it but recorded from
// another holder, Update changes nothing and returns an error matching
// [ErrStaleFence] that names the table, the row, the fence and the row's
// fence. With fence 0 it sends nothing and returns an error matching
// [ErrNoFence]. If there is no such row, the error matches [sql.ErrNoRows].
// If the update matched more than one row (IDColumn is not unique), it has
// changed them all: Update returns an error, and the caller must roll back.
// Database errors are returned wrapped; the transaction may then be aborted.
func (g SQL) Update(ctx context.Context, tx Execer, id any, h Holder, set string, args ...any) error {
	n, err := g.names()
	if err != nil {
		return err
	}
	fence, owner := h.Fence(), OwnerID(h.Token())
	row := fmt.Sprintf("%s row %s = %v", n.table, n.id, id)
	if fence == 0 {
		return noFence(row)
	}
	k := len(args)
	f, idArg, o := "$"+strconv.Itoa(k+1), "$"+strconv.Itoa(k+2), "$"+strconv.Itoa(k+3)
	var q strings.Builder
	q.WriteString("UPDATE " + n.table + " SET ")
	if strings.TrimSpace(set) != "" {
		q.WriteString(set + ", ")
	}
	q.WriteString(n.fence + " = " + f + ", " + n.owner + " = " + o +
		" WHERE " + n.id + " = " + idArg +
		" AND (" + n.fence + " < " + f + " OR (" + n.fence + " = " + f + " AND " + n.owner + " = " + o + "))")

	res, err := tx.ExecContext(ctx, q.String(), append(args[:k:k], fence, id, owner)...)
	if err != nil {
		return fmt.Errorf("redlock: fenced update of %s (fence %d): %w", row, fence, err)
	}
	affected, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("redlock: fenced update of %s (fence %d): rows affected: %w", row, fence, err)
	}
	switch {
	case affected == 1:
		return nil
	case affected > 1:
		return fmt.Errorf("redlock: fenced update of %s changed %d rows: %s must be unique (a primary key); roll the transaction back", row, affected, n.id)
	}

	// Nothing changed: a higher fence, the same fence from another holder,
	// or no such row. Tell them apart.
	var cur, curOwner sql.NullString
	err = tx.QueryRowContext(ctx, "SELECT "+n.fence+", "+n.owner+" FROM "+n.table+" WHERE "+n.id+" = $1", id).Scan(&cur, &curOwner)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("redlock: fenced update of %s: no such row: insert it first, with %s = 0 and %s = '': %w", row, n.fence, n.owner, err)
	case err != nil:
		return fmt.Errorf("redlock: fenced update of %s (fence %d) changed nothing; reading its fence: %w", row, fence, err)
	case !cur.Valid:
		return fmt.Errorf("redlock: fenced update of %s: its %s is NULL: make the column NOT NULL DEFAULT 0", row, n.fence)
	case !curOwner.Valid:
		return fmt.Errorf("redlock: fenced update of %s: its %s is NULL: make the column NOT NULL DEFAULT ''", row, n.owner)
	}
	highest, perr := strconv.ParseUint(cur.String, 10, 64)
	switch {
	case perr == nil && highest == fence && curOwner.String != owner:
		return fenceTie(row, fence)
	case perr == nil && highest <= fence:
		// Not stale after all: something else filtered the row out.
		return fmt.Errorf("redlock: fenced update of %s (fence %d) changed nothing though its %s is %s: a concurrent delete, a trigger or a row security policy?", row, fence, n.fence, cur.String)
	}
	return staleFence(row, fence, cur.String)
}

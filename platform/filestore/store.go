package filestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/uptrace/bun"
)

// fileRow is the stored form of a Record. The organisation and tag lists are
// JSON text, portable across both dialects; permissions are checked in Go
// after loading by primary key, so they never need to be queried.
type fileRow struct {
	bun.BaseModel  `bun:"table:platform_files"`
	ID             string     `bun:"id,pk"`
	Bucket         string     `bun:"bucket"`
	Type           string     `bun:"type"`
	Name           string     `bun:"name"`
	StorageKey     string     `bun:"storage_key"`
	Hash           string     `bun:"hash"`
	ContentType    string     `bun:"content_type"`
	Size           int64      `bun:"size"`
	UserID         string     `bun:"user_id"`
	UserName       string     `bun:"user_name"`
	OrganisationID string     `bun:"organisation_id"`
	Organisations  string     `bun:"organisations"`
	Tags           string     `bun:"tags"`
	Status         string     `bun:"status"`
	CreatedAt      time.Time  `bun:"created_at"`
	ArchivedAt     *time.Time `bun:"archived_at"`
	ArchivedBy     string     `bun:"archived_by"`
}

type store struct {
	db bun.IDB
}

func toRow(r *Record) (*fileRow, error) {
	orgs, err := json.Marshal(nonNil(r.Organisations))
	if err != nil {
		return nil, err
	}
	tags, err := json.Marshal(nonNil(r.Tags))
	if err != nil {
		return nil, err
	}
	return &fileRow{
		ID: r.ID, Bucket: r.Bucket, Type: r.Type, Name: r.Name, StorageKey: r.Path, Hash: r.Hash,
		ContentType: r.ContentType, Size: r.Size, UserID: r.UserID, UserName: r.UserName,
		OrganisationID: r.OrganisationID, Organisations: string(orgs), Tags: string(tags),
		Status: r.Status, CreatedAt: r.CreatedAt.UTC(),
	}, nil
}

func (row *fileRow) record() (*Record, error) {
	r := &Record{
		ID: row.ID, Bucket: row.Bucket, Type: row.Type, Name: row.Name, Path: row.StorageKey, Hash: row.Hash,
		ContentType: row.ContentType, Size: row.Size, UserID: row.UserID, UserName: row.UserName,
		OrganisationID: row.OrganisationID, Status: row.Status, CreatedAt: row.CreatedAt.UTC(),
	}
	if err := json.Unmarshal([]byte(row.Organisations), &r.Organisations); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(row.Tags), &r.Tags); err != nil {
		return nil, err
	}
	return r, nil
}

func (s store) insert(ctx context.Context, r *Record) error {
	row, err := toRow(r)
	if err != nil {
		return err
	}
	_, err = s.db.NewInsert().Model(row).Exec(ctx)
	return err
}

// get loads a file by id; nil when there is none.
func (s store) get(ctx context.Context, id string) (*Record, error) {
	var row fileRow
	err := s.db.NewSelect().Model(&row).Where("id = ?", id).Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return row.record()
}

// getMany loads the files of ids in one query, by id.
func (s store) getMany(ctx context.Context, ids []string) (map[string]*Record, error) {
	out := make(map[string]*Record, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []fileRow
	if err := s.db.NewSelect().Model(&rows).Where("id IN (?)", bun.List(ids)).Scan(ctx); err != nil {
		return nil, err
	}
	for i := range rows {
		r, err := rows[i].record()
		if err != nil {
			return nil, err
		}
		out[r.ID] = r
	}
	return out, nil
}

// archive moves an active file to archived; false when it was not active (or
// does not exist), so that two concurrent archives cannot both succeed.
func (s store) archive(ctx context.Context, id, by string, at time.Time) (bool, error) {
	at = at.UTC()
	res, err := s.db.NewUpdate().Model((*fileRow)(nil)).
		Set("status = ?", StatusArchived).
		Set("archived_at = ?", at).
		Set("archived_by = ?", by).
		Where("id = ?", id).
		Where("status = ?", StatusActive).
		Exec(ctx)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

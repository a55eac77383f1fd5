package history

import (
	"encoding/json"
	"fmt"
	"io"
)

// formatVersion is the version of the JSON format Save writes.
const formatVersion = 1

// Saved is a history as Save writes it and Load reads it back: enough to
// run [Check] and draw [WriteTimeline] again anywhere, without the test
// that recorded it.
//
// The JSON form is one object:
//
//	{"version": 1, "title": "soak", "counters": {"r": 42},
//	 "events": [{"kind": "acquire", "client": "c1", "node": -1, "lock": "r",
//	             "token": "…", "fence": 7, "start_ns": 1000, "at_ns": 2000,
//	             "until_ns": 900000000}, …]}
//
// Times are nanoseconds on the recorder's clock (since NewRecorder).
type Saved struct {
	Title    string           `json:"title,omitempty"`
	Counters map[string]int64 `json:"counters,omitempty"` // CheckOptions.Counters
	Events   []Event          `json:"events"`
}

// savedFile is the JSON object, with its version.
type savedFile struct {
	Version int `json:"version"`
	Saved
}

// Save writes s to w as JSON.
func Save(w io.Writer, s *Saved) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	if err := enc.Encode(savedFile{Version: formatVersion, Saved: *s}); err != nil {
		return fmt.Errorf("redlocktest: saving a history: %w", err)
	}
	return nil
}

// Load reads a history written by Save.
func Load(r io.Reader) (*Saved, error) {
	var f savedFile
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("redlocktest: loading a history: %w (want the JSON that history.Save writes)", err)
	}
	if f.Version != formatVersion {
		return nil, fmt.Errorf("redlocktest: loading a history: version %d; this version of redlocktest reads version %d", f.Version, formatVersion)
	}
	return &f.Saved, nil
}

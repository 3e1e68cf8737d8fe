// Package profile keeps the CLI's API keys, one per profile, in a file only its owner can read.
package profile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Profile is what `rental login` stores under a name.
type Profile struct {
	APIKey string `json:"api_key"`
}

// Store is the file of profiles: {"profiles": {"default": {"api_key": "sk_test_…"}}}.
type Store struct {
	Path string
}

type file struct {
	Profiles map[string]Profile `json:"profiles"`
}

// DefaultPath is $RENTAL_CONFIG_FILE, else rental/config.json in the user's configuration
// directory (XDG_CONFIG_HOME, else ~/.config on Linux).
func DefaultPath(getenv func(string) string) (string, error) {
	if p := getenv("RENTAL_CONFIG_FILE"); p != "" {
		return p, nil
	}
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			return "", errors.New("no configuration directory: set RENTAL_CONFIG_FILE, XDG_CONFIG_HOME or HOME")
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "rental", "config.json"), nil
}

// Get returns the named profile; found is false when there is none (or no file yet).
func (s Store) Get(name string) (p Profile, found bool, err error) {
	f, err := s.read()
	if err != nil {
		return Profile{}, false, err
	}
	p, found = f.Profiles[name]
	return p, found, nil
}

// Put stores p under name, keeping the other profiles. The file is written whole to a
// temporary file and renamed, mode 0600 in a directory of mode 0700.
func (s Store) Put(name string, p Profile) error {
	f, err := s.read()
	if err != nil {
		return err
	}
	f.Profiles[name] = p
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(s.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("profiles: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".config-*.json") // created 0600
	if err != nil {
		return fmt.Errorf("profiles: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename, there is nothing to remove
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("profiles: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("profiles: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.Path); err != nil {
		return fmt.Errorf("profiles: %w", err)
	}
	return nil
}

func (s Store) read() (file, error) {
	f := file{Profiles: map[string]Profile{}}
	info, err := os.Stat(s.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("profiles: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		// As ssh does with a private key: a key others can read is refused, not used.
		return f, fmt.Errorf("profiles: %s is readable by others (mode %s); chmod 600 it", s.Path, info.Mode().Perm())
	}
	b, err := os.ReadFile(s.Path)
	if err != nil {
		return f, fmt.Errorf("profiles: %w", err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("profiles: %s: %w", s.Path, err)
	}
	if f.Profiles == nil {
		f.Profiles = map[string]Profile{}
	}
	return f, nil
}

// Prefix returns the prefix of an API key (sk_test_, sk_live_, rk_test_ or rk_live_), "" for a
// string that has none.
func Prefix(key string) string {
	for _, p := range []string{"sk_test_", "sk_live_", "rk_test_", "rk_live_"} {
		if strings.HasPrefix(key, p) {
			return p
		}
	}
	return ""
}

// Mask shows a key as its mode and last four characters: sk_test_…abcd.
func Mask(key string) string {
	prefix := Prefix(key)
	if len(key) < len(prefix)+8 {
		return prefix + "…"
	}
	return prefix + "…" + key[len(key)-4:]
}

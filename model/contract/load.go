package contract

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// LoadFS loads the contracts at name in fsys: one contract file, or a
// directory whose *.yaml and *.yml files are each one contract.
// Subdirectories and other files are skipped, so a README may sit beside
// the contracts. Every file is parsed and all errors are returned together;
// two files for one pipeline are an error naming both. An empty directory
// gives an empty Set: every pipeline then gets the default contract.
//
// The caller chooses the file system (os.DirFS, embed.FS, fstest.MapFS), so
// this package does no I/O of its own.
func LoadFS(fsys fs.FS, name string) (*Set, error) {
	info, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("loading contracts: %w", err)
	}
	if !info.IsDir() {
		c, err := loadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		return NewSet(c)
	}
	entries, err := fs.ReadDir(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("loading contracts: %w", err)
	}
	var (
		cs   []*Contract
		errs []error
	)
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || !isYAML(e.Name()) {
			continue
		}
		c, err := loadFile(fsys, path.Join(name, e.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cs = append(cs, c)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return NewSet(cs...)
}

func isYAML(name string) bool {
	return strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")
}

func loadFile(fsys fs.FS, name string) (*Contract, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("loading contract: %w", err)
	}
	return parse(fsys, name, data)
}

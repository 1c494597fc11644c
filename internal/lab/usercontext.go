package lab

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/tare-dev/tare/internal/kube"
)

// DefaultContext is the name of the context tare lab up adds to the user's kubeconfig for the lab in the
// default directory; a lab in another directory (--dir) gets ContextName's per-directory name.
const DefaultContext = "tare-lab"

// UserContext is what tare lab up added to the user's kubeconfig (AddUserContext), recorded in the state
// so that down takes it out again (Down, removeUserContext).
type UserContext struct {
	// Name is the context's name, also the name of its cluster and user entries (as kind names its three).
	Name string `json:"name"`
	// Previous is the current-context before up ("" for none), which down makes current again.
	Previous string `json:"previous_context,omitempty"`
	// Files are the kubeconfig files the change touched.
	Files []KubeconfigFile `json:"files"`
}

// KubeconfigFile is one file of the user's kubeconfig that AddUserContext changed.
type KubeconfigFile struct {
	Path    string `json:"path"`
	Existed bool   `json:"existed"`
	// Backup is a copy of the file before up, in the lab directory (0600), put back by down when the
	// file is still as up left it.
	Backup string `json:"backup,omitempty"`
	// Written is the SHA-256 of the file as up left it ("" until written).
	Written string `json:"written_sha256,omitempty"`
	// MadeDir is the directory (~/.kube) up created for the file, removed by down when empty.
	MadeDir string `json:"made_dir,omitempty"`
}

// ContextName is the context tare lab up adds for the lab in dir: DefaultContext for the default lab
// directory, else tare-lab-BASE with BASE the directory's name (a leading tare-lab- dropped), so that
// several labs have a context each.
func ContextName(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	if def, err := filepath.Abs(DefaultDir()); err == nil && def == abs {
		return DefaultContext
	}
	base := strings.TrimPrefix(filepath.Base(abs), DefaultContext+"-")
	var b strings.Builder
	for _, r := range strings.ToLower(base) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-.")
	if name == "" {
		return DefaultContext + "-" + dirHash(abs)
	}
	return DefaultContext + "-" + name
}

// dirHash is a short hash of a lab directory, which tells apart two labs whose directories share a name.
func dirHash(dir string) string {
	h := sha256.Sum256([]byte(dir))
	return hex.EncodeToString(h[:3])
}

// AddUserContext adds the running lab to the user's kubeconfig as kubectl config set-cluster,
// set-credentials, set-context and use-context would (clientcmd.ModifyConfig with kubectl's rules,
// kube.PathOptions: $KUBECONFIG's files, else ~/.kube/config), with the lab's certificates embedded, and
// makes it the current context. It records what it changed in the lab's state first, so that Down undoes
// it even after a crash. A file it creates as root in a directory owned by another user (sudo with the
// user's $HOME) is given to that user. An unwritable kubeconfig is an error that changes nothing; the lab
// runs on.
func (l *Lab) AddUserContext() (*UserContext, error) {
	st, err := l.fresh()
	if err != nil {
		return nil, err
	}
	dir := st.Dir
	if st.UserContext != nil {
		return nil, fmt.Errorf("the lab in %s already has the context %s in the user's kubeconfig", dir, st.UserContext.Name)
	}
	lab, err := clientcmd.LoadFromFile(st.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading the lab's kubeconfig: %w", err)
	}
	if err := clientcmdapi.FlattenConfig(lab); err != nil {
		return nil, fmt.Errorf("reading the lab's kubeconfig: %w", err)
	}
	labCtx, ok := lab.Contexts[lab.CurrentContext]
	if !ok || lab.Clusters[labCtx.Cluster] == nil || lab.AuthInfos[labCtx.AuthInfo] == nil {
		return nil, fmt.Errorf("the lab's kubeconfig %s has no usable current context", st.Kubeconfig)
	}
	po := kube.PathOptions()
	cfg, err := po.GetStartingConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig %s: %w", strings.Join(po.GetLoadingPrecedence(), string(filepath.ListSeparator)), err)
	}
	name := ContextName(dir)
	if c, ok := cfg.Clusters[name]; ok && c.Server != lab.Clusters[labCtx.Cluster].Server {
		name += "-" + dirHash(dir) // another lab's (or the user's own) entry by that name
	}
	uc := &UserContext{Name: name, Previous: cfg.CurrentContext}
	if uc.Previous == name { // left by a lab that was never brought down
		uc.Previous = ""
	}
	if uc.Files, err = backUp(dir, po.GetLoadingPrecedence()); err != nil {
		return nil, err
	}
	st.UserContext = uc
	if err := st.save(); err != nil {
		return nil, err
	}
	cluster, user := *lab.Clusters[labCtx.Cluster], *lab.AuthInfos[labCtx.AuthInfo]
	cluster.LocationOfOrigin, user.LocationOfOrigin = "", ""
	cfg.Clusters[name], cfg.AuthInfos[name] = &cluster, &user
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	werr := clientcmd.ModifyConfig(po, *cfg, false)
	uc.Files = written(uc.Files)
	if werr != nil {
		if rerr := restoreFiles(uc.Files); rerr != nil {
			werr = errors.Join(werr, rerr)
		}
		st.UserContext = nil
		_ = st.save()
		return nil, fmt.Errorf("adding the context %s to the kubeconfig %s: %w", name, strings.Join(po.GetLoadingPrecedence(), string(filepath.ListSeparator)), werr)
	}
	if len(uc.Files) == 0 {
		st.UserContext = nil
		return nil, st.save()
	}
	return uc, st.save()
}

// backUp copies every file of the user's kubeconfig that exists into the lab directory and notes those
// that do not (and the directory a new one would need).
func backUp(dir string, files []string) ([]KubeconfigFile, error) {
	var out []KubeconfigFile
	for i, p := range files {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		f := KubeconfigFile{Path: abs}
		b, err := os.ReadFile(abs)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if _, derr := os.Stat(filepath.Dir(abs)); errors.Is(derr, fs.ErrNotExist) {
				f.MadeDir = filepath.Dir(abs)
			}
		case err != nil:
			return nil, fmt.Errorf("reading the kubeconfig %s: %w", abs, err)
		default:
			f.Existed = true
			f.Backup = filepath.Join(dir, fmt.Sprintf("user-kubeconfig-%d.before", i))
			if err := os.WriteFile(f.Backup, b, 0o600); err != nil {
				return nil, fmt.Errorf("keeping a copy of the kubeconfig %s: %w", abs, err)
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// written keeps the files that ModifyConfig changed, each with its hash now, gives a new file (and
// directory) made as root to the owner of the directory it is in, and drops the copies of the others.
func written(files []KubeconfigFile) []KubeconfigFile {
	var out []KubeconfigFile
	for _, f := range files {
		b, err := os.ReadFile(f.Path)
		changed := err == nil
		if changed && f.Existed {
			before, berr := os.ReadFile(f.Backup)
			changed = berr != nil || !bytes.Equal(before, b)
		}
		if !changed {
			if f.Backup != "" {
				_ = os.Remove(f.Backup)
			}
			continue
		}
		sum := sha256.Sum256(b)
		f.Written = hex.EncodeToString(sum[:])
		if !f.Existed {
			if f.MadeDir != "" {
				giveToParentOwner(f.MadeDir)
			}
			giveToParentOwner(f.Path)
		}
		out = append(out, f)
	}
	return out
}

// giveToParentOwner gives path, made by root, to the owner of its directory: root running tare lab up
// with a user's $HOME (sudo -E) must not leave that user a kubeconfig they cannot read.
func giveToParentOwner(path string) {
	if os.Geteuid() != 0 {
		return
	}
	fi, err := os.Stat(filepath.Dir(path))
	if err != nil {
		return
	}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 {
		_ = os.Lchown(path, int(sys.Uid), int(sys.Gid))
	}
}

// removeUserContext takes the lab's context out of the user's kubeconfig. A file still as up left it is
// put back as it was, byte for byte (or removed, with the directory up made for it, when up created it);
// when the user changed the kubeconfig since, the lab's cluster, user and context entries are deleted as
// kubectl config delete-context would, keeping the user's changes, and the previous context is made
// current again if the lab's still is. It returns a sentence saying what it did.
func removeUserContext(st *State) (string, error) {
	uc := st.UserContext
	if uc == nil {
		return "", nil
	}
	var paths []string
	untouched := true
	for _, f := range uc.Files {
		paths = append(paths, f.Path)
		b, err := os.ReadFile(f.Path)
		sum := sha256.Sum256(b)
		untouched = untouched && err == nil && f.Written == hex.EncodeToString(sum[:])
	}
	where := strings.Join(paths, string(filepath.ListSeparator))
	back := "no current context"
	if uc.Previous != "" {
		back = "current context " + uc.Previous
	}
	if untouched {
		if err := restoreFiles(uc.Files); err != nil {
			return "", fmt.Errorf("putting back the kubeconfig %s: %w", where, err)
		}
		return fmt.Sprintf("kubeconfig %s put back as it was before up (%s)", where, back), nil
	}
	if err := deleteContext(uc, paths); err != nil {
		return "", fmt.Errorf("removing the context %s from the kubeconfig %s: %w", uc.Name, where, err)
	}
	for _, f := range uc.Files {
		if f.Backup != "" {
			_ = os.Remove(f.Backup)
		}
	}
	return fmt.Sprintf("context %s removed from the kubeconfig %s, which changed since up (%s)", uc.Name, where, back), nil
}

// restoreFiles puts every file back from its copy, or removes it (and the directory made for it, when
// empty) when it did not exist.
func restoreFiles(files []KubeconfigFile) error {
	var errs []error
	for _, f := range files {
		if !f.Existed {
			if err := os.Remove(f.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			if f.MadeDir != "" {
				_ = os.Remove(f.MadeDir) // only when empty
			}
			continue
		}
		b, err := os.ReadFile(f.Backup)
		if err != nil {
			errs = append(errs, fmt.Errorf("the copy of %s: %w", f.Path, err))
			continue
		}
		// Writing in place keeps the file's owner and mode.
		if err := os.WriteFile(f.Path, b, 0o600); err != nil {
			errs = append(errs, err)
			continue
		}
		_ = os.Remove(f.Backup)
	}
	return errors.Join(errs...)
}

// deleteContext deletes the lab's entries from the files as kubectl config delete-context, delete-cluster
// and delete-user would, and puts the previous context back when the lab's is still current.
func deleteContext(uc *UserContext, files []string) error {
	po := &recordedFiles{files: files}
	cfg, err := po.GetStartingConfig()
	if err != nil {
		return err
	}
	delete(cfg.Contexts, uc.Name)
	delete(cfg.Clusters, uc.Name)
	delete(cfg.AuthInfos, uc.Name)
	if cfg.CurrentContext == uc.Name {
		cfg.CurrentContext = ""
		if _, ok := cfg.Contexts[uc.Previous]; ok {
			cfg.CurrentContext = uc.Previous
		}
	}
	return clientcmd.ModifyConfig(po, *cfg, false)
}

// recordedFiles is kubectl's access to a kubeconfig (clientcmd.ConfigAccess) over the files up recorded,
// whatever $KUBECONFIG and $HOME are when down runs.
type recordedFiles struct{ files []string }

func (r *recordedFiles) GetLoadingPrecedence() []string { return r.files }
func (r *recordedFiles) IsExplicitFile() bool           { return false }
func (r *recordedFiles) GetExplicitFile() string        { return "" }

func (r *recordedFiles) GetStartingConfig() (*clientcmdapi.Config, error) {
	rules := &clientcmd.ClientConfigLoadingRules{Precedence: r.files}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).RawConfig()
	if err != nil {
		return nil, err
	}
	return &cfg, nil
}

// GetDefaultFilename is kubectl's choice among several files: the first that exists, else the last.
func (r *recordedFiles) GetDefaultFilename() string {
	for _, f := range r.files {
		if _, err := os.Stat(f); err == nil {
			return f
		}
	}
	return r.files[len(r.files)-1]
}

package redact

import (
	"strings"
	"testing"
)

// TestClientFlags: the password flags of redis-cli, curl and the registry logins are masked in their own
// arguments only; the same flags elsewhere (a port, a user, ls -a) stay.
func TestClientFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []string
		want string
	}{
		{"redis-cli -a", []string{"redis-cli", "-a", "hunter2"}, "redis-cli -a ***"},
		{"redis-cli host, port and -a", []string{"/usr/bin/redis-cli", "-h", "db", "-p", "6379", "-a", "hunter2", "ping"}, "/usr/bin/redis-cli -h db -p 6379 -a *** ping"},
		{"redis-cli --pass", []string{"redis-cli", "--pass", "hunter2"}, "redis-cli --pass ***"},
		{"redis-cli --askpass takes none", []string{"redis-cli", "--askpass", "-h", "db"}, "redis-cli --askpass -h db"},
		{"redis-benchmark -a", []string{"redis-benchmark", "-a", "hunter2", "-q"}, "redis-benchmark -a *** -q"},
		{"valkey-cli -a through sudo", []string{"sudo", "valkey-cli", "-a", "hunter2"}, "sudo valkey-cli -a ***"},
		{"redis-server --requirepass", []string{"redis-server", "--requirepass", "hunter2", "--masterauth", "hunter3"}, "redis-server --requirepass *** --masterauth ***"},
		{"redis url", []string{"redis-cli", "-u", "redis://:hunter2@db:6379/0"}, "redis-cli -u redis://:***@db:6379/0"},
		{"curl -u", []string{"curl", "-u", "alice:hunter2", "https://h/"}, "curl -u alice:*** https://h/"},
		{"curl --user", []string{"curl", "--user", "alice:hunter2"}, "curl --user alice:***"},
		{"curl --user=", []string{"curl", "--user=alice:hunter2"}, "curl --user=alice:***"},
		{"curl -u glued", []string{"curl", "-ualice:hunter2"}, "curl -ualice:***"},
		{"curl bundled -sSu", []string{"curl", "-sSu", "alice:hunter2"}, "curl -sSu alice:***"},
		{"curl bundled and glued", []string{"curl", "-sSfualice:hunter2"}, "curl -sSfualice:***"},
		{"curl proxy user", []string{"curl", "-U", "bob:hunter2", "--proxy-user", "bob:hunter3"}, "curl -U bob:*** --proxy-user bob:***"},
		{"curl cert password", []string{"curl", "--cert", "client.pem:hunter2"}, "curl --cert client.pem:***"},
		{"curl password with colons", []string{"curl", "-u", "alice:a:b"}, "curl -u alice:***"},
		{"curl user alone prompts: stays", []string{"curl", "-u", "alice", "https://h/"}, "curl -u alice https://h/"},
		{"curl -o's value is not -u", []string{"curl", "-ou:x", "https://h/"}, "curl -ou:x https://h/"},
		{"curl -XPUT stays", []string{"curl", "-XPUT", "https://h/"}, "curl -XPUT https://h/"},
		{"wget passwords by name", []string{"wget", "--user=alice", "--password=hunter2", "--http-password", "hunter3"}, "wget --user=alice --password=*** --http-password ***"},
		{"ctr pull -u", []string{"ctr", "-n", "k8s.io", "images", "pull", "-u", "alice:hunter2", "r/i"}, "ctr -n k8s.io images pull -u alice:*** r/i"},
		{"crictl --creds and --auth", []string{"crictl", "pull", "--creds", "alice:hunter2", "--auth", "YWxpY2U6aHVudGVyMg=="}, "crictl pull --creds *** --auth ***"},
		{"skopeo creds", []string{"skopeo", "copy", "--src-creds=alice:hunter2", "docker://a", "docker://b"}, "skopeo copy --src-creds=*** docker://a docker://b"},
		{"docker login -p", []string{"docker", "login", "-u", "me", "-p", "hunter2", "registry.example.com"}, "docker login -u me -p *** registry.example.com"},
		{"docker login -p glued", []string{"docker", "login", "-phunter2"}, "docker login -p***"},
		{"docker login -p=", []string{"docker", "login", "-p=hunter2"}, "docker login -p***"},
		{"docker login --password", []string{"docker", "login", "--password", "hunter2", "r"}, "docker login --password *** r"},
		{"docker login --password-stdin takes none", []string{"docker", "login", "--password-stdin", "-u", "me", "r"}, "docker login --password-stdin -u me r"},
		{"docker global flags before login", []string{"docker", "--config", "/c", "login", "-p", "hunter2"}, "docker --config /c login -p ***"},
		{"podman login", []string{"podman", "login", "-p", "hunter2", "quay.io"}, "podman login -p *** quay.io"},
		{"helm registry login", []string{"helm", "registry", "login", "r.io", "-u", "me", "-p", "hunter2"}, "helm registry login r.io -u me -p ***"},
		{"crane auth login", []string{"crane", "auth", "login", "r.io", "-u", "me", "-p", "hunter2"}, "crane auth login r.io -u me -p ***"},
		{"oc login", []string{"oc", "login", "-u", "dev", "-p", "hunter2", "https://api:6443"}, "oc login -u dev -p *** https://api:6443"},
		{"docker run -p is a port", []string{"docker", "run", "-p", "8080:80", "-u", "1000:1000", "nginx"}, "docker run -p 8080:80 -u 1000:1000 nginx"},
		{"podman run -p is a port", []string{"podman", "run", "-p8080:80", "nginx"}, "podman run -p8080:80 nginx"},
		{"login then run: -p is a port again", []string{"docker", "login", "-p", "hunter2", "r", "&&", "docker", "run", "-p", "80:80", "x"}, "docker login -p *** r && docker run -p 80:80 x"},
		{"ls -a stays", []string{"ls", "-a", "/tmp"}, "ls -a /tmp"},
		{"cp -a stays", []string{"cp", "-a", "src", "dst"}, "cp -a src dst"},
		{"sudo -u stays", []string{"sudo", "-u", "root:wheel", "id"}, "sudo -u root:wheel id"},
		{"redis-cli -p stays", []string{"redis-cli", "-p", "6379"}, "redis-cli -p 6379"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Join(tt.in); got != tt.want {
				t.Errorf("Join(%q) = %q, want %q", tt.in, got, tt.want)
			}
			// The same command line as free text (a joined line, a shell script) comes out the same.
			if got := Text(strings.Join(tt.in, " ")); got != tt.want {
				t.Errorf("Text(%q) = %q, want %q", strings.Join(tt.in, " "), got, tt.want)
			}
		})
	}
}

// TestClientFlagsInScripts: in a shell script a new line ends a client's arguments, as ; does, and the
// passwords of clients on every line are found however the words are spaced.
func TestClientFlagsInScripts(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"set -e\nredis-cli -a hunter2 ping\ndocker run -p 80:80 x": "set -e\nredis-cli -a *** ping\ndocker run -p 80:80 x",
		"docker login -p hunter2 r\ndocker run -p 80:80 x":         "docker login -p *** r\ndocker run -p 80:80 x",
		"curl\t-u  alice:hunter2\t https://h/":                     "curl\t-u  alice:***\t https://h/",
		`sh -c "curl -u alice:hunter2"`:                            `sh -c "curl -u alice:***"`,
		"mysql -uroot -phunter2 shop;\nssh -p 22 host":             "mysql -uroot -p*** shop;\nssh -p 22 host",
		"  redis-cli -a hunter2  ":                                 "  redis-cli -a ***  ",
		"docker login -p hunter2; docker run -p 80:80 x":           "docker login -p ***; docker run -p 80:80 x",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}

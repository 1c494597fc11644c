package redact

import (
	"path"
	"strings"
)

// passwordClients take the password glued to a short -p flag (mysql -uroot -pSECRET); sshpass also takes it
// as the next word (sshpass -p SECRET ssh host). Elsewhere -p is a port, a pod or a parallelism (ssh -p 22,
// docker run -p 8080:80, kubectl port-forward -p POD, redis-cli -p6379), so -p is masked only in the
// arguments of these programs.
var passwordClients = map[string]bool{
	"mysql": true, "mysqldump": true, "mysqladmin": true, "mysqlimport": true, "mysqlshow": true,
	"mysqlcheck": true, "mysqlpump": true, "mysqlsh": true, "mysqlbinlog": true, "mysqlslap": true,
	"mariadb": true, "mariadb-dump": true, "mariadb-admin": true, "mariadb-import": true,
	"mariadb-check": true, "mariadb-show": true, "mariadb-slap": true, "sshpass": true,
}

// separatePassword are the clients whose bare -p takes the password as the next word. mysql's bare -p
// prompts for it instead, and the word after it is the database: that stays.
var separatePassword = map[string]bool{"sshpass": true}

// spelledPassword are -p words that name the flag rather than glue a value to it (mysql -password VALUE):
// the flag rule masks the next word instead.
var spelledPassword = map[string]bool{"password": true, "passwd": true, "pass": true}

// clientPasswords returns words with the passwords given to a password client masked: -pSECRET after the
// client's name (so through sudo, env or time too), and for sshpass the word after a bare -p. A client takes
// one password (what follows sshpass's is the command it runs), and a shell separator (; | && ||) ends its
// arguments. words is not changed.
func clientPasswords(words []string) []string {
	out := make([]string, len(words))
	copy(out, words)
	client := ""
	for i := 0; i < len(out); i++ {
		w := out[i]
		switch {
		case w == ";" || w == "|" || w == "&&" || w == "||":
			client = ""
		case client != "" && len(w) > 2 && strings.HasPrefix(w, "-p") && !spelledPassword[w[1:]]:
			out[i] = "-p" + Mask + w[len(strings.TrimRight(w, `"';`)):] // keep a closing quote or ;
			client = ""
		case client != "" && w == "-p" && separatePassword[client] && i+1 < len(out):
			i++
			out[i] = Mask
			client = ""
		case passwordClients[path.Base(strings.TrimLeft(w, `"'(`))]:
			client = path.Base(strings.TrimLeft(w, `"'(`))
		}
		if strings.HasSuffix(w, ";") {
			client = ""
		}
	}
	return out
}

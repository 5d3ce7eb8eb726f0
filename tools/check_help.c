/*
 * check_help: does `stackcap-demo --help` name every scenario of
 * scn_scenarios[], and every explorer body of exp_bodies[] in its
 * "Explorable" list?  Reads the real tables, so a scenario or a body added
 * there can never be left out of the help unnoticed.  ctest runs it as
 * stackcap_demo_help.
 *
 * usage: check_help /path/to/stackcap-demo
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "explore.h"
#include "scenarios.h"

/* Is there a line "  NAME  summary..." in text? */
static bool
help_lists(const char *text, const char *name)
{
	const char *at;
	size_t len = strlen(name);

	for (at = text; (at = strstr(at, name)) != NULL; at += len)
		if (at - text >= 3 && strncmp(at - 3, "\n  ", 3) == 0 &&
		    at[len] == ' ')
			return (true);
	return (false);
}

int
main(int argc, char **argv)
{
	char cmd[4096], *text = NULL, *bodies;
	size_t i, len = 0, cap = 0, n;
	FILE *fp;
	int missing = 0, status;

	if (argc != 2) {
		fprintf(stderr, "usage: %s /path/to/stackcap-demo\n", argv[0]);
		return (2);
	}
	snprintf(cmd, sizeof(cmd), "'%s' --help", argv[1]);
	if ((fp = popen(cmd, "r")) == NULL) {
		perror("popen");
		return (1);
	}
	do {
		if (len + 1024 + 1 > cap) {
			cap = 2 * cap + 1024 + 1;
			if ((text = realloc(text, cap)) == NULL) {
				perror("realloc");
				return (1);
			}
		}
		n = fread(text + len, 1, 1024, fp);
		len += n;
	} while (n > 0);
	text[len] = '\0';
	status = pclose(fp);
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "check_help: %s --help failed\n", argv[1]);
		return (1);
	}
	for (i = 0; i < scn_nscenarios; i++) {
		if (!help_lists(text, scn_scenarios[i].name)) {
			fprintf(stderr, "check_help: --help does not list the "
			    "scenario \"%s\"\n", scn_scenarios[i].name);
			missing++;
		}
	}
	/* The bodies' names are scenarios' names too: look after the
	 * heading of their own list. */
	bodies = strstr(text, "\nExplorable");
	for (i = 0; i < exp_nbodies; i++) {
		if (bodies == NULL || !help_lists(bodies, exp_bodies[i].name)) {
			fprintf(stderr, "check_help: --help does not list the "
			    "explorer body \"%s\"\n", exp_bodies[i].name);
			missing++;
		}
	}
	free(text);
	if (missing != 0)
		return (1);
	printf("--help lists all %zu scenarios and %zu explorer bodies\n",
	    scn_nscenarios, exp_nbodies);
	return (0);
}

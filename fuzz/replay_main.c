/*
 * Replay runner: feeds every file of the directories (or the files) named
 * on the command line to LLVMFuzzerTestOneInput(), so that the corpus of a
 * harness runs under ctest in any build, without libFuzzer.  A failing
 * input aborts, as it would under the fuzzer; the file being run is printed
 * first so that the failure names it.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
run_file(const char *path)
{
	uint8_t *data;
	size_t size;
	long n;
	FILE *f;

	if ((f = fopen(path, "rb")) == NULL) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return (1);
	}
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0) {
		fprintf(stderr, "replay: %s: cannot size\n", path);
		fclose(f);
		return (1);
	}
	size = (size_t)n;
	/* An exact-size copy, as libFuzzer makes, so ASan sees overreads. */
	data = malloc(size + (size == 0));
	if (data == NULL || fread(data, 1, size, f) != size) {
		fprintf(stderr, "replay: %s: cannot read\n", path);
		free(data);
		fclose(f);
		return (1);
	}
	fclose(f);
	fprintf(stderr, "replay: %s (%zu bytes)\n", path, size);
	LLVMFuzzerTestOneInput(data, size);
	free(data);
	return (0);
}

static int
name_cmp(const void *a, const void *b)
{
	return (strcmp(*(char *const *)a, *(char *const *)b));
}

/* The files of a directory, in name order (a stable log), not recursive. */
static int
run_dir(const char *dir, int *nrun)
{
	char **names, **nn, path[4096];
	size_t i, n, cap;
	struct dirent *de;
	struct stat sb;
	int errors;
	DIR *d;

	if ((d = opendir(dir)) == NULL) {
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		return (1);
	}
	names = NULL;
	n = cap = 0;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			if ((nn = realloc(names, cap * sizeof(*nn))) == NULL)
				abort();
			names = nn;
		}
		if ((names[n++] = strdup(de->d_name)) == NULL)
			abort();
	}
	closedir(d);
	if (n > 0)
		qsort(names, n, sizeof(*names), name_cmp);
	for (errors = 0, i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
			errors += run_file(path);
			(*nrun)++;
		}
		free(names[i]);
	}
	free(names);
	return (errors);
}

int
main(int argc, char **argv)
{
	struct stat sb;
	int errors, i, nrun;

	if (argc < 2) {
		fprintf(stderr, "usage: %s dir-or-file ...\n", argv[0]);
		return (2);
	}
	for (errors = 0, nrun = 0, i = 1; i < argc; i++) {
		if (stat(argv[i], &sb) != 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i],
			    strerror(errno));
			errors++;
		} else if (S_ISDIR(sb.st_mode))
			errors += run_dir(argv[i], &nrun);
		else {
			errors += run_file(argv[i]);
			nrun++;
		}
	}
	/* An empty corpus proves nothing: treat it as a failure. */
	if (nrun == 0) {
		fprintf(stderr, "replay: no input found\n");
		return (1);
	}
	fprintf(stderr, "replay: %d inputs, %d errors\n", nrun, errors);
	return (errors != 0);
}

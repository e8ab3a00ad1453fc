/*
 * symtab.c - names to declarations: an open-addressing hash table, so that
 * scripts with many tensors or ops are checked for duplicates in linear
 * time.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* 32-bit FNV-1a. */
static uint32_t symtab_hash(const char *name)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *s = (const unsigned char *)name; *s != '\0'; s++)
		h = (h ^ *s) * 16777619u;
	return h;
}

const struct sym *symtab_find(const struct symtab *tab, const char *name)
{
	if (tab->cap == 0)
		return NULL;
	for (uint32_t i = symtab_hash(name) & (tab->cap - 1);; i = (i + 1) & (tab->cap - 1)) {
		if (tab->slots[i].name == NULL)
			return NULL;
		if (strcmp(tab->slots[i].name, name) == 0)
			return &tab->slots[i];
	}
}

static void symtab_insert(struct sym *slots, uint32_t cap, const struct sym *sym)
{
	uint32_t i = symtab_hash(sym->name) & (cap - 1);

	while (slots[i].name != NULL)
		i = (i + 1) & (cap - 1);
	slots[i] = *sym;
}

int symtab_add(struct symtab *tab, const struct sym *sym)
{
	/* Keep the table at most half full. */
	if ((uint64_t)(tab->count + 1) * 2 > tab->cap) {
		uint32_t cap = tab->cap ? tab->cap * 2 : 64;
		struct sym *slots;

		if (cap <= tab->cap)
			return -1;
		if ((slots = calloc(cap, sizeof *slots)) == NULL)
			return -1;
		for (uint32_t i = 0; i < tab->cap; i++)
			if (tab->slots[i].name != NULL)
				symtab_insert(slots, cap, &tab->slots[i]);
		free(tab->slots);
		tab->slots = slots;
		tab->cap = cap;
	}
	symtab_insert(tab->slots, tab->cap, sym);
	tab->count++;
	return 0;
}

void symtab_free(struct symtab *tab)
{
	free(tab->slots);
	memset(tab, 0, sizeof *tab);
}

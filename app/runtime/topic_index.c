/*
 * app/runtime/topic_index.c — the pipeline's topic index (see topic_index.h).
 */
#include "app/runtime/topic_index.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *ptr; /* a message's topic name pointer */
  const wd_topic_ent_t *te;
} wd_topic_seen_t;

struct wd_topic_index {
  wd_topic_ent_t *ents; /* every topic */
  size_t n;
  uint32_t *slot; /* index + 1 into ents, 0 = empty */
  size_t mask; /* slots - 1 */
  wd_topic_seen_t seen[8]; /* this batch's topic pointers */
  size_t nseen;
  wd_batch_tp_t *btp; /* this batch's partitions */
  size_t nbtp, cap_btp;
};

static uint32_t topic_hash(const char *s) { /* FNV-1a */
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

wd_topic_index_t *wd_topic_index_new(const wd_topic_ent_t *ents, size_t n) {
  wd_topic_index_t *ix = calloc(1, sizeof(*ix));
  if (!ix) return NULL;
  size_t slots = 8;
  while (slots < 2 * n) slots *= 2;
  if (!(ix->ents = calloc(n ? n : 1, sizeof(*ix->ents))) || !(ix->slot = calloc(slots, sizeof(uint32_t)))) {
    wd_topic_index_destroy(ix);
    return NULL;
  }
  ix->mask = slots - 1;
  for (size_t i = 0; i < n; i++) {
    size_t h = topic_hash(ents[i].name) & ix->mask;
    bool dup = false;
    for (; ix->slot[h]; h = (h + 1) & ix->mask)
      if (!strcmp(ix->ents[ix->slot[h] - 1].name, ents[i].name)) {
        dup = true;
        break;
      }
    if (dup) continue;
    ix->ents[ix->n] = ents[i];
    ix->slot[h] = (uint32_t)++ix->n;
  }
  return ix;
}

void wd_topic_index_destroy(wd_topic_index_t *ix) {
  if (!ix) return;
  free(ix->ents);
  free(ix->slot);
  free(ix->btp);
  free(ix);
}

size_t wd_topic_index_size(const wd_topic_index_t *ix) { return ix->n; }

void wd_topic_index_batch_begin(wd_topic_index_t *ix) {
  ix->nseen = 0;
  ix->nbtp = 0;
}

const wd_topic_ent_t *wd_topic_index_find(wd_topic_index_t *ix, const char *topic) {
  for (size_t i = ix->nseen; i-- > 0;)
    if (ix->seen[i].ptr == topic) return ix->seen[i].te;
  const wd_topic_ent_t *te = NULL;
  for (size_t h = topic_hash(topic) & ix->mask; ix->slot[h]; h = (h + 1) & ix->mask)
    if (!strcmp(ix->ents[ix->slot[h] - 1].name, topic)) {
      te = &ix->ents[ix->slot[h] - 1];
      break;
    }
  if (ix->nseen < sizeof(ix->seen) / sizeof(ix->seen[0])) ix->seen[ix->nseen++] = (wd_topic_seen_t){topic, te};
  return te;
}

int wd_topic_index_take(wd_topic_index_t *ix, const wd_topic_ent_t *te, int32_t partition, int64_t offset) {
  wd_batch_tp_t *b = NULL;
  for (size_t i = ix->nbtp; i-- > 0 && !b;) /* the last one first: a batch's records come in runs of a partition */
    if (ix->btp[i].te == te && ix->btp[i].partition == partition) b = &ix->btp[i];
  if (!b) {
    if (ix->nbtp == ix->cap_btp) {
      size_t cap = ix->cap_btp ? ix->cap_btp * 2 : 16;
      wd_batch_tp_t *nb = realloc(ix->btp, cap * sizeof(*nb));
      if (!nb) return -1;
      ix->btp = nb;
      ix->cap_btp = cap;
    }
    b = &ix->btp[ix->nbtp++];
    *b = (wd_batch_tp_t){te, partition, INT64_MAX, -1, -1, 0};
  }
  b->count++;
  b->last = offset;
  if (offset < b->min) b->min = offset;
  if (offset > b->max) b->max = offset;
  return 0;
}

const wd_batch_tp_t *wd_topic_index_batch(const wd_topic_index_t *ix, size_t *n) {
  *n = ix->nbtp;
  return ix->btp;
}

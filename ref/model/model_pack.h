/* model_pack.h: a model's float matrices put into the layout the fast
 * kernels read (kernels/pack.h), once, at load (model_prepare.h), each
 * source's memory given back as it is packed. */
#ifndef STEPWISE_MODEL_PACK_H
#define STEPWISE_MODEL_PACK_H

#include "ref/model/model.h"
#include "ref/util/error.h"

/* Repack m's row-major float matrices (any element type) for the fast
 * kernels, giving each source's memory back as it is packed (a mapped file's
 * pages, an owned copy, the model's storage). A tied embedding is then read
 * from the packed classifier. Nothing to do for an int8 model. From here on
 * the block takes the fast kernels (m->fast_kernels). */
bool model_pack(Model *m, StepError *err);

/* A PackReleaseRows for a model (ctx: the Model): stored rows r0..r1-1 of
 * a row-major source (or of a file's GGUF blocks) go back once packed: a
 * mapped file's pages are dropped (read again from the file if touched), an
 * anonymous store's pages given back. Owned sources are freed whole later. */
void model_pack_release_rows(void *ctx, const Matrix *w, int r0, int r1);

#endif

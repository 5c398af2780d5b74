/* model_pack.h: a model's float matrices put into the layout the fast
 * kernels read (kernels/pack.h), once, at load (model_prepare.h), each
 * source's memory given back as it is packed. */
#ifndef STEPWISE_MODEL_PACK_H
#define STEPWISE_MODEL_PACK_H

#include "ref/model.h"
#include "ref/util/error.h"

/* Repack m's row-major float matrices (any element type) for the fast
 * kernels, giving each source's memory back as it is packed (a mapped file's
 * pages, an owned copy, the model's storage). A tied embedding is then read
 * from the packed classifier. Nothing to do for an int8 model. From here on
 * the block takes the fast kernels (m->fast_kernels). */
bool model_pack(Model *m, StepError *err);

#endif

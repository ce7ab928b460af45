/*
 * data.h: the data part of libtrn (images, augmentation, data sets, loader).
 * Its declarations are public and live in trn.h, section "data"; this
 * header stays so that the data sources and tests include one name.
 */
#ifndef TRN_DATA_H
#define TRN_DATA_H

#include "trn.h"

#endif /* TRN_DATA_H */

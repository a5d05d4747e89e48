"""get_rope_index of Qwen2.5-Omni and Qwen3-Omni and their processors' audio-in-video token layout,
written from transformers 4.57 (models/qwen2_5_omni/modeling_qwen2_5_omni.py and
processing_qwen2_5_omni.py; models/qwen3_omni_moe/modeling_qwen3_omni_moe.py and
processing_qwen3_omni_moe.py), per sequence, in torch (Debian's 1.13) so that the float32
arithmetic is torch's. One deliberate change: audio lengths are computed with Python ints
(torch 1.13's `//` on tensors truncates toward zero; torch >= 2, which transformers requires,
floors — the same as Python). Nothing here imports stoker."""
import numpy as np
import torch

QWEN25 = dict(image=151655, video=151656, audio=151646, vision_start=151652, audio_start=151647,
              pps=25, seconds_per_chunk=2, merge=2)
QWEN3 = dict(image=151655, video=151656, audio=151646, vision_start=151652, audio_start=151647,
             pps=13.0, merge=2)


def feat_lengths_25(L):
    return ((L - 1) // 2 + 1 - 2) // 2 + 1


def feat_lengths_3(L):
    leave = L % 100
    feat = (leave - 1) // 2 + 1
    return ((feat - 1) // 2 + 1 - 1) // 2 + 1 + (L // 100) * 13


def llm_pos_ids_for_vision_25(start_idx, vision_idx, spatial_merge_size, t_index, grid_hs, grid_ws):
    llm_grid_h = grid_hs[vision_idx] // spatial_merge_size
    llm_grid_w = grid_ws[vision_idx] // spatial_merge_size
    h_index = torch.arange(llm_grid_h).view(1, -1, 1).expand(len(t_index), -1, llm_grid_w).flatten()
    w_index = torch.arange(llm_grid_w).view(1, 1, -1).expand(len(t_index), llm_grid_h, -1).flatten()
    t_index = torch.Tensor(t_index).view(-1, 1).expand(-1, llm_grid_h * llm_grid_w).flatten().long()
    return torch.stack([t_index, h_index, w_index]) + start_idx


def llm_pos_ids_for_vision_3(start_idx, vision_idx, spatial_merge_size, t_index, grid_hs, grid_ws):
    llm_grid_h = grid_hs[vision_idx] // spatial_merge_size
    llm_grid_w = grid_ws[vision_idx] // spatial_merge_size
    h_index = torch.arange(llm_grid_h).view(1, -1, 1).expand(len(t_index), -1, llm_grid_w).flatten().float()
    w_index = torch.arange(llm_grid_w).view(1, 1, -1).expand(len(t_index), llm_grid_h, -1).flatten().float()
    t_index = torch.Tensor(t_index).view(-1, 1).expand(-1, llm_grid_h * llm_grid_w).flatten().float()
    return torch.stack([t_index, h_index, w_index]) + start_idx


def get_chunked_index_model(token_indices, tokens_per_chunk, remove_index):
    def _iter():
        i, start_idx = 0, 0
        current_chunk = 1
        while i < len(token_indices):
            if token_indices[i] - remove_index >= current_chunk * tokens_per_chunk:
                yield (start_idx, i)
                start_idx = i
                current_chunk += 1
            i += 1
        yield (start_idx, len(token_indices))
    return list(_iter())


def rope_25(input_ids, image_grid_thw, video_grid_thw, attention_mask, use_audio_in_video, audio_seqlens,
            second_per_grids, cfg=QWEN25):
    """Qwen2_5OmniPreTrainedModelForConditionalGeneration.get_rope_index for one sequence."""
    input_ids = torch.tensor([input_ids], dtype=torch.long)
    attention_mask = torch.tensor([attention_mask], dtype=torch.long)
    image_grid_thw = torch.tensor(image_grid_thw, dtype=torch.long) if image_grid_thw else None
    video_grid_thw = torch.tensor(video_grid_thw, dtype=torch.long) if video_grid_thw else None
    second_per_grids = torch.tensor(second_per_grids, dtype=torch.float) if second_per_grids else None
    spatial_merge_size = cfg["merge"]
    image_token_id, video_token_id, audio_token_id = cfg["image"], cfg["video"], cfg["audio"]
    vision_start_token_id, audio_start_token_id = cfg["vision_start"], cfg["audio_start"]
    position_id_per_seconds, seconds_per_chunk = cfg["pps"], cfg["seconds_per_chunk"]
    if image_grid_thw is not None or video_grid_thw is not None:
        total_input_ids = input_ids
        attention_mask = attention_mask == 1
        position_ids = torch.ones(3, input_ids.shape[0], input_ids.shape[1], dtype=input_ids.dtype)
        image_idx, video_idx, audio_idx = 0, 0, 0
        for i, input_ids in enumerate(total_input_ids):
            input_ids = input_ids[attention_mask[i]]
            vision_start_indices = torch.argwhere(input_ids == vision_start_token_id).squeeze(1)
            vision_tokens = input_ids[vision_start_indices + 1]
            audio_nums = torch.sum(input_ids == audio_start_token_id)
            image_nums = (vision_tokens == image_token_id).sum()
            video_nums = ((vision_tokens == audio_start_token_id).sum() if use_audio_in_video
                          else (vision_tokens == video_token_id).sum())
            input_tokens = input_ids.tolist()
            llm_pos_ids_list = []
            st = 0
            remain_images, remain_videos, remain_audios = image_nums, video_nums, audio_nums
            multimodal_nums = (image_nums + audio_nums if use_audio_in_video
                               else image_nums + video_nums + audio_nums)
            for _ in range(multimodal_nums):
                st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
                ed_image = (input_tokens.index(image_token_id, st)
                            if image_token_id in input_tokens and remain_images > 0 else len(input_tokens) + 1)
                ed_video = (input_tokens.index(video_token_id, st)
                            if video_token_id in input_tokens and remain_videos > 0 else len(input_tokens) + 1)
                ed_audio = (input_tokens.index(audio_token_id, st)
                            if audio_token_id in input_tokens and remain_audios > 0 else len(input_tokens) + 1)
                min_ed = min(ed_image, ed_video, ed_audio)
                if min_ed == ed_audio:
                    text_len = min_ed - st - 1
                    if text_len != 0:
                        st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
                        llm_pos_ids_list.append(torch.arange(text_len).view(1, -1).expand(3, -1) + st_idx)
                    st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
                    bos_len = 1
                    llm_pos_ids_list.append(torch.arange(bos_len).view(1, -1).expand(3, -1) + st_idx)
                    st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
                    audio_len = feat_lengths_25(int(audio_seqlens[audio_idx]))
                    llm_pos_ids_list.append(torch.arange(audio_len).view(1, -1).expand(3, -1) + st_idx)
                    st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
                    eos_len = 1
                    llm_pos_ids_list.append(torch.arange(eos_len).view(1, -1).expand(3, -1) + st_idx)
                    st += text_len + bos_len + audio_len + eos_len
                    audio_idx += 1
                    remain_audios -= 1
                elif min_ed == ed_image:
                    text_len = min_ed - st - 1
                    if text_len != 0:
                        st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
                        llm_pos_ids_list.append(torch.arange(text_len).view(1, -1).expand(3, -1) + st_idx)
                    st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
                    bos_len = 1
                    llm_pos_ids_list.append(torch.arange(bos_len).view(1, -1).expand(3, -1) + st_idx)
                    st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
                    grid_t = image_grid_thw[image_idx][0]
                    grid_hs, grid_ws = image_grid_thw[:, 1], image_grid_thw[:, 2]
                    t_index = (torch.arange(grid_t) * 1 * position_id_per_seconds).long()
                    llm_pos_ids = llm_pos_ids_for_vision_25(st_idx, image_idx, spatial_merge_size, t_index,
                                                            grid_hs, grid_ws)
                    image_len = image_grid_thw[image_idx].prod() // (spatial_merge_size ** 2)
                    llm_pos_ids_list.append(llm_pos_ids)
                    st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
                    eos_len = 1
                    llm_pos_ids_list.append(torch.arange(eos_len).view(1, -1).expand(3, -1) + st_idx)
                    st += text_len + bos_len + image_len + eos_len
                    image_idx += 1
                    remain_images -= 1
                elif min_ed == ed_video and not use_audio_in_video:
                    text_len = min_ed - st - 1
                    if text_len != 0:
                        st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
                        llm_pos_ids_list.append(torch.arange(text_len).view(1, -1).expand(3, -1) + st_idx)
                    st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
                    bos_len = 1
                    llm_pos_ids_list.append(torch.arange(bos_len).view(1, -1).expand(3, -1) + st_idx)
                    st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
                    grid_t = video_grid_thw[video_idx][0]
                    grid_hs, grid_ws = video_grid_thw[:, 1], video_grid_thw[:, 2]
                    t_index = (torch.arange(grid_t) * second_per_grids[video_idx].cpu().float()
                               * position_id_per_seconds).long()
                    llm_pos_ids = llm_pos_ids_for_vision_25(st_idx, video_idx, spatial_merge_size, t_index,
                                                            grid_hs, grid_ws)
                    video_len = video_grid_thw[video_idx].prod() // (spatial_merge_size ** 2)
                    llm_pos_ids_list.append(llm_pos_ids)
                    st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
                    eos_len = 1
                    llm_pos_ids_list.append(torch.arange(eos_len).view(1, -1).expand(3, -1) + st_idx)
                    st += text_len + bos_len + video_len + eos_len
                    video_idx += 1
                    remain_videos -= 1
                elif min_ed == ed_video and use_audio_in_video:
                    text_len = min_ed - st - 2
                    if text_len != 0:
                        st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
                        llm_pos_ids_list.append(torch.arange(text_len).view(1, -1).expand(3, -1) + st_idx)
                    st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
                    bos_len = 1
                    llm_pos_ids_list.append(torch.arange(bos_len).view(1, -1).expand(3, -1) + st_idx)
                    llm_pos_ids_list.append(torch.arange(bos_len).view(1, -1).expand(3, -1) + st_idx)
                    st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
                    audio_len = feat_lengths_25(int(audio_seqlens[audio_idx]))
                    audio_llm_pos_ids = torch.arange(audio_len).view(1, -1).expand(3, -1) + st_idx
                    grid_t = video_grid_thw[video_idx][0]
                    grid_hs, grid_ws = video_grid_thw[:, 1], video_grid_thw[:, 2]
                    t_index = (torch.arange(grid_t) * second_per_grids[video_idx].cpu().float()
                               * position_id_per_seconds).long()
                    video_llm_pos_ids = llm_pos_ids_for_vision_25(st_idx, video_idx, spatial_merge_size, t_index,
                                                                  grid_hs, grid_ws)
                    t_ntoken_per_chunk = int(position_id_per_seconds * seconds_per_chunk)
                    video_chunk_indexes = get_chunked_index_model(video_llm_pos_ids[0], t_ntoken_per_chunk, st_idx)
                    audio_chunk_indexes = get_chunked_index_model(audio_llm_pos_ids[0], t_ntoken_per_chunk, st_idx)
                    for j in range(max(len(video_chunk_indexes), len(audio_chunk_indexes))):
                        video_chunk_index = video_chunk_indexes[j] if j < len(video_chunk_indexes) else None
                        audio_chunk_index = audio_chunk_indexes[j] if j < len(audio_chunk_indexes) else None
                        if video_chunk_index is not None:
                            llm_pos_ids_list.append(video_llm_pos_ids[:, video_chunk_index[0]:video_chunk_index[1]])
                        if audio_chunk_index is not None:
                            llm_pos_ids_list.append(audio_llm_pos_ids[:, audio_chunk_index[0]:audio_chunk_index[1]])
                    video_len = video_grid_thw[video_idx].prod() // (spatial_merge_size ** 2)
                    st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
                    eos_len = 1
                    llm_pos_ids_list.append(torch.arange(eos_len).view(1, -1).expand(3, -1) + st_idx)
                    llm_pos_ids_list.append(torch.arange(eos_len).view(1, -1).expand(3, -1) + st_idx)
                    st += text_len + bos_len * 2 + audio_len + video_len + eos_len * 2
                    audio_idx += 1
                    video_idx += 1
                    remain_videos -= 1
                    remain_audios -= 1
            if st < len(input_tokens):
                st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
                text_len = len(input_tokens) - st
                llm_pos_ids_list.append(torch.arange(text_len).view(1, -1).expand(3, -1) + st_idx)
            llm_positions = torch.cat(llm_pos_ids_list, dim=1).reshape(3, -1)
            position_ids[..., i, attention_mask[i]] = llm_positions
            delta = llm_positions.max() + 1 - len(input_ids)
        return position_ids[:, 0, :].tolist(), float(delta)
    position_ids = attention_mask.long().cumsum(-1) - 1
    position_ids.masked_fill_(attention_mask == 0, 1)
    position_ids = position_ids.unsqueeze(0).expand(3, -1, -1)
    max_position_ids = position_ids.max(0, keepdim=False)[0].max(-1, keepdim=True)[0]
    delta = max_position_ids + 1 - torch.sum(attention_mask, dim=-1, keepdim=True)
    return position_ids[:, 0, :].tolist(), float(delta[0, 0])


def rope_3(input_ids, image_grid_thw, video_grid_thw, attention_mask, use_audio_in_video, audio_seqlens,
           second_per_grids, cfg=QWEN3):
    """Qwen3OmniMoePreTrainedModelForConditionalGeneration.get_rope_index for one sequence."""
    input_ids = torch.tensor([input_ids], dtype=torch.long)
    attention_mask = torch.tensor([attention_mask], dtype=torch.long)
    image_grid_thw = torch.tensor(image_grid_thw, dtype=torch.long) if image_grid_thw else None
    video_grid_thw = torch.tensor(video_grid_thw, dtype=torch.long) if video_grid_thw else None
    second_per_grids = torch.tensor(second_per_grids, dtype=torch.float) if second_per_grids else None
    spatial_merge_size = cfg["merge"]
    image_token_id, video_token_id, audio_token_id = cfg["image"], cfg["video"], cfg["audio"]
    vision_start_token_id, audio_start_token_id = cfg["vision_start"], cfg["audio_start"]
    position_id_per_seconds = cfg["pps"]
    if image_grid_thw is not None or video_grid_thw is not None:
        total_input_ids = input_ids
        attention_mask = attention_mask == 1
        position_ids = torch.zeros(3, input_ids.shape[0], input_ids.shape[1], dtype=torch.float)
        image_idx, video_idx, audio_idx = 0, 0, 0
        for i, input_ids in enumerate(total_input_ids):
            input_ids = input_ids[attention_mask[i]]
            vision_start_indices = torch.argwhere(input_ids == vision_start_token_id).squeeze(1)
            vision_tokens = input_ids[vision_start_indices + 1]
            audio_nums = torch.sum(input_ids == audio_start_token_id)
            image_nums = (vision_tokens == image_token_id).sum()
            video_nums = ((vision_tokens == audio_start_token_id).sum() if use_audio_in_video
                          else (vision_tokens == video_token_id).sum())
            input_tokens = input_ids.tolist()
            llm_pos_ids_list = []
            st = 0
            remain_images, remain_videos, remain_audios = image_nums, video_nums, audio_nums
            multimodal_nums = (image_nums + audio_nums if use_audio_in_video
                               else image_nums + video_nums + audio_nums)
            for _ in range(multimodal_nums):
                st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
                if (image_token_id in input_tokens or video_token_id in input_tokens) and (
                        remain_videos > 0 or remain_images > 0):
                    ed_vision_start = input_tokens.index(vision_start_token_id, st)
                else:
                    ed_vision_start = len(input_tokens) + 1
                if audio_token_id in input_tokens and remain_audios > 0:
                    ed_audio_start = input_tokens.index(audio_start_token_id, st)
                else:
                    ed_audio_start = len(input_tokens) + 1
                min_ed = min(ed_vision_start, ed_audio_start)
                text_len = min_ed - st
                if text_len != 0:
                    llm_pos_ids_list.append(torch.arange(text_len).view(1, -1).expand(3, -1) + st_idx)
                    st_idx += text_len
                if min_ed == ed_vision_start and ed_vision_start + 1 == ed_audio_start:
                    bos_len, eos_len = 2, 2
                else:
                    bos_len, eos_len = 1, 1
                llm_pos_ids_list.append(torch.arange(bos_len).view(1, -1).expand(3, -1) + st_idx)
                st_idx += bos_len
                if min_ed == ed_audio_start:
                    audio_len = feat_lengths_3(int(audio_seqlens[audio_idx]))
                    llm_pos_ids_list.append(torch.arange(audio_len).view(1, -1).expand(3, -1) + st_idx)
                    st += int(text_len + bos_len + audio_len + eos_len)
                    audio_idx += 1
                    remain_audios -= 1
                elif min_ed == ed_vision_start and input_ids[ed_vision_start + 1] == image_token_id:
                    grid_t = image_grid_thw[image_idx][0]
                    grid_hs, grid_ws = image_grid_thw[:, 1], image_grid_thw[:, 2]
                    t_index = (torch.arange(grid_t) * 1 * position_id_per_seconds).float()
                    llm_pos_ids = llm_pos_ids_for_vision_3(st_idx, image_idx, spatial_merge_size, t_index,
                                                           grid_hs, grid_ws)
                    image_len = image_grid_thw[image_idx].prod() // (spatial_merge_size ** 2)
                    llm_pos_ids_list.append(llm_pos_ids)
                    st += int(text_len + bos_len + image_len + eos_len)
                    image_idx += 1
                    remain_images -= 1
                elif min_ed == ed_vision_start and input_ids[ed_vision_start + 1] == video_token_id:
                    grid_t = video_grid_thw[video_idx][0]
                    grid_hs, grid_ws = video_grid_thw[:, 1], video_grid_thw[:, 2]
                    t_index = (torch.arange(grid_t) * second_per_grids[video_idx].cpu().float()
                               * position_id_per_seconds).float()
                    llm_pos_ids = llm_pos_ids_for_vision_3(st_idx, video_idx, spatial_merge_size, t_index,
                                                           grid_hs, grid_ws)
                    video_len = video_grid_thw[video_idx].prod() // (spatial_merge_size ** 2)
                    llm_pos_ids_list.append(llm_pos_ids)
                    st += int(text_len + bos_len + video_len + eos_len)
                    video_idx += 1
                    remain_videos -= 1
                elif min_ed == ed_vision_start and ed_vision_start + 1 == ed_audio_start:
                    audio_len = feat_lengths_3(int(audio_seqlens[audio_idx]))
                    audio_llm_pos_ids = torch.arange(audio_len).view(1, -1).expand(3, -1) + st_idx
                    grid_t = video_grid_thw[video_idx][0]
                    grid_hs, grid_ws = video_grid_thw[:, 1], video_grid_thw[:, 2]
                    t_index = (torch.arange(grid_t) * second_per_grids[video_idx].cpu().float()
                               * position_id_per_seconds).float()
                    video_llm_pos_ids = llm_pos_ids_for_vision_3(st_idx, video_idx, spatial_merge_size, t_index,
                                                                 grid_hs, grid_ws)
                    video_data_index, audio_data_index = 0, 0
                    while (video_data_index < video_llm_pos_ids.shape[-1]
                           and audio_data_index < audio_llm_pos_ids.shape[-1]):
                        if video_llm_pos_ids[0][video_data_index] <= audio_llm_pos_ids[0][audio_data_index]:
                            llm_pos_ids_list.append(video_llm_pos_ids[:, video_data_index:video_data_index + 1])
                            video_data_index += 1
                        else:
                            llm_pos_ids_list.append(audio_llm_pos_ids[:, audio_data_index:audio_data_index + 1])
                            audio_data_index += 1
                    if video_data_index < video_llm_pos_ids.shape[-1]:
                        llm_pos_ids_list.append(video_llm_pos_ids[:, video_data_index:video_llm_pos_ids.shape[-1]])
                    if audio_data_index < audio_llm_pos_ids.shape[-1]:
                        llm_pos_ids_list.append(audio_llm_pos_ids[:, audio_data_index:audio_llm_pos_ids.shape[-1]])
                    video_len = video_grid_thw[video_idx].prod() // (spatial_merge_size ** 2)
                    st += int(text_len + bos_len + audio_len + video_len + eos_len)
                    audio_idx += 1
                    video_idx += 1
                    remain_videos -= 1
                    remain_audios -= 1
                st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
                llm_pos_ids_list.append(torch.arange(eos_len).view(1, -1).expand(3, -1) + st_idx)
            if st < len(input_tokens):
                st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
                text_len = len(input_tokens) - st
                llm_pos_ids_list.append(torch.arange(text_len).view(1, -1).expand(3, -1) + st_idx)
            llm_positions = torch.cat([item.float() for item in llm_pos_ids_list], dim=1).reshape(3, -1)
            position_ids[..., i, attention_mask[i] == 1] = llm_positions
            delta = llm_positions.max() + 1 - len(input_ids)
        return position_ids[:, 0, :].tolist(), float(delta)
    position_ids = attention_mask.float().cumsum(-1) - 1
    position_ids.masked_fill_(attention_mask == 0, 1)
    position_ids = position_ids.unsqueeze(0).expand(3, -1, -1)
    max_position_ids = position_ids.max(0, keepdim=False)[0].max(-1, keepdim=True)[0]
    delta = max_position_ids + 1 - torch.sum(attention_mask, dim=-1, keepdim=True)
    return position_ids[:, 0, :].tolist(), float(delta[0, 0])


# ---- the processors (replace_multimodal_special_tokens, use_audio_in_video branch) ----

def get_chunked_index_processor(token_indices, tokens_per_chunk):
    def _iter():
        i, start_idx = 0, 0
        current_chunk = 1
        while i < len(token_indices):
            if token_indices[i] >= current_chunk * tokens_per_chunk:
                yield (start_idx, i)
                start_idx = i
                current_chunk += 1
            i += 1
        yield (start_idx, len(token_indices))
    return list(_iter())


def aiv_placeholder(family, grid_thw, second_per_grid, audio_len, pps, seconds_per_chunk=2.0, merge=2):
    """The run list ('V'/'A' per token) between <|vision_bos|><|audio_bos|> and
    <|audio_eos|><|vision_eos|>, as the processor builds the placeholder string."""
    audio_token_indices = np.arange(audio_len)
    height, width = grid_thw[1] // merge, grid_thw[2] // merge
    video_token_indices = np.arange(grid_thw[0]).reshape(-1, 1, 1)
    video_token_indices = np.broadcast_to(video_token_indices, (video_token_indices.shape[0], height, width)).reshape(-1)
    video_token_indices = video_token_indices * second_per_grid * pps
    out = []
    if family == "qwen2.5-omni":
        tokens_per_chunk = int(pps * seconds_per_chunk)
        vc = get_chunked_index_processor(video_token_indices, tokens_per_chunk)
        ac = get_chunked_index_processor(audio_token_indices, tokens_per_chunk)
        for j in range(max(len(vc), len(ac))):
            if j < len(vc):
                out += ["V"] * (vc[j][1] - vc[j][0])
            if j < len(ac):
                out += ["A"] * (ac[j][1] - ac[j][0])
        return out
    v, a = 0, 0
    while v < len(video_token_indices) and a < len(audio_token_indices):
        if video_token_indices[v] <= audio_token_indices[a]:
            out.append("V")
            v += 1
        else:
            out.append("A")
            a += 1
    out += ["V"] * (len(video_token_indices) - v)
    out += ["A"] * (len(audio_token_indices) - a)
    return out
